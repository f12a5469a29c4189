{% macro generate_schema_name(custom_schema_name, node) -%}
    {#- Layers are schemas of their own name (bronze, silver, gold), not <target>_<layer>. -#}
    {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
