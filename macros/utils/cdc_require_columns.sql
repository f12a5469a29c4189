{% macro cdc_require_columns(relation, columns) -%}
    {#-
        Stops the run with a message that says what to do when an incremental model's table
        lacks `columns`: it was built by an earlier version of the project, whose layout the
        model's MERGE cannot write into.
    -#}
    {%- if execute -%}
        {%- set present = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
        {%- set missing = columns | reject('in', present) | list -%}
        {%- if missing -%}
            {{ exceptions.raise_compiler_error(
                relation ~ " was built by an earlier version of cdc-lakehouse and lacks " ~ missing | join(', ')
                ~ ": rebuild it once with `lakehouse build --select " ~ relation.identifier ~ " --full-refresh`"
            ) }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
