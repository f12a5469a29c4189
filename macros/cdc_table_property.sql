{% macro cdc_table_property(relation, name) -%}
    {#- The value Spark shows for table property `name` of `relation` (none when it shows no row):
        how a seed's checksum and a table's SQL digest are read back. A missing property shows
        Spark's "does not have property" text, which never equals a checksum or a digest. -#}
    {%- set rows = run_query('show tblproperties ' ~ relation ~ ' (' ~ cdc_sql_string(name) ~ ')').rows -%}
    {{ return(rows[0][-1] if rows | length > 0 else none) }}
{%- endmacro %}
