{% macro cdc_hand_over(name, value) -%}
    {#-
        Keep `value` under `name` for this model's post-hooks in this dbt invocation, which take
        it with cdc_handed. dbt renders a model's SQL and, later, its hooks in two separate
        contexts: what the model's compile read (a query's rows) would otherwise be read again
        by the hook. The one object both contexts share is the manifest's flat graph (`graph`),
        so the value is kept there (cdc_invocation_memo), under this node's id. Only a value
        read at compile time that the model's own write does not change belongs here (the
        typed columns' specs, which the hook would otherwise query a second time).
    -#}
    {%- if execute -%}
        {%- do cdc_invocation_memo('handed').update({model.unique_id ~ ' ' ~ name: value}) -%}
    {%- endif -%}
{%- endmacro %}

{% macro cdc_handed(name) -%}
    {#- What this model handed over under `name` in this invocation (cdc_hand_over), taken: a
        second call returns none. None too when nothing was handed over (the hook runs without
        the model's compile, or a dbt version whose contexts share no graph): the caller then
        reads the value itself. -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(cdc_invocation_memo('handed').pop(model.unique_id ~ ' ' ~ name, none)) }}
{%- endmacro %}

{% macro cdc_invocation_memo(area) -%}
    {#- A mapping kept for the rest of this dbt invocation under `area`: in the manifest's flat
        graph (`graph`), the one object a model's compile, its hooks and the later nodes all see.
        What an earlier invocation left there (the manifest object can outlive it) is dropped
        when this one first asks. Holds the hand-overs (cdc_hand_over) and the newest commits
        read (cdc_remember_commit). -#}
    {%- set memo = graph.setdefault('cdc_lakehouse_' ~ area, {}) -%}
    {%- if memo.get('invocation_id') != invocation_id -%}
        {%- do memo.clear() -%}
        {%- do memo.update({'invocation_id': invocation_id, 'entries': {}}) -%}
    {%- endif -%}
    {{ return(memo['entries']) }}
{%- endmacro %}
