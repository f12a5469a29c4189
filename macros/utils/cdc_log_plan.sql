{% macro cdc_log_plan(plan) -%}
    {#-
        One line in the build's output saying what the running model is about to read and how
        it writes it (the plan its compile-time queries chose: nothing new, an append, a MERGE
        and why), so that a run can be followed and explained model by model. Only at
        execution: parsing and docs say nothing.
    -#}
    {%- if execute -%}
        {{ log(this ~ ': ' ~ plan, info=true) }}
    {%- endif -%}
{%- endmacro %}
