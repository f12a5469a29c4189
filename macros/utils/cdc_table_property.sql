{% macro cdc_table_property(relation, name) -%}
    {#- The value Spark shows for table property `name` of `relation` (none when it shows no row):
        how a seed's checksum and a table's SQL digest are read back. A missing property shows
        Spark's "does not have property" text, which never equals a checksum or a digest. -#}
    {%- set rows = run_query('show tblproperties ' ~ relation ~ ' (' ~ cdc_sql_string(name) ~ ')').rows -%}
    {{ return(rows[0][-1] if rows | length > 0 else none) }}
{%- endmacro %}

{% macro cdc_database_property(database, name) -%}
    {#- The value of database property `name` of `database`, none when it has none
        (cdc_database_properties). -#}
    {{ return(cdc_database_properties(database).get(name)) }}
{%- endmacro %}

{% macro cdc_database_properties(database) -%}
    {#- The properties of `database` as a mapping (`describe database extended`: a metastore
        entry, no Delta commit). Values are expected without parentheses or commas: digests. -#}
    {%- set properties = {} -%}
    {%- for row in run_query('describe database extended ' ~ database).rows if row[0] == 'Properties' -%}
        {%- for name, value in modules.re.findall('[(]([^(),]+),([^(),]*)[)]', row[1] or '') -%}
            {%- do properties.update({name: value}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(properties) }}
{%- endmacro %}

{% macro cdc_relation_has_property(relation, name, value) -%}
    {#- Whether `relation` (dbt's relation, none when absent) has table property `name` equal to
        `value`. A view's entry in dbt's cache holds its `show table extended` listing, which
        shows its properties ("Table Properties: [k=v, ...]"): read there, without a query.
        Else (a Delta table's listing shows none, a relation created in this run has no
        listing) asked: cdc_table_property. -#}
    {%- if relation is none -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set listing = relation.information or '' -%}
    {%- if 'Table Properties: [' in listing -%}
        {%- set shown = name ~ '=' ~ value -%}
        {%- for before in ['[', ', '] -%}
            {%- for after in [',', ']'] -%}
                {%- if (before ~ shown ~ after) in listing -%}
                    {{ return(true) }}
                {%- endif -%}
            {%- endfor -%}
        {%- endfor -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(cdc_table_property(relation, name) == value) }}
{%- endmacro %}
