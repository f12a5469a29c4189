{#
    Whether gold.cdc_typed_columns and its typed views can be left as they are without reading the
    table columns. Its specs (cdc_typed_column_specs) are decided from gold.cdc_table_columns,
    the cdc_column_type_overrides seed and this project's code; the views from the specs. So
    while none of the three changed since the last build that created the views, they are still
    those views, and the spec query (the first read of a table's data in a build with nothing
    new) has nothing to tell.
#}

{% macro cdc_typed_specs_key() -%}
    {#-
        One digest of what the specs are decided from, read without reading the table columns'
        rows: the newest commit of gold.cdc_table_columns (`describe history ... limit 1`), the
        checksum of the overrides seed as loaded (from dbt's listing of its view), and the code:
        every macro of this project and the model's own SQL, so that an upgrade decides the
        views again. None when a part is unknown (a table not built yet, a seed not loaded from
        its CSV as it is now, a dbt whose macros do not show their code): the specs are then read.
    -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {#- the commit that last wrote its rows: a run with nothing to change records only its
        watermark, for the version it leaves (cdc_table_column_change) -#}
    {%- set columns = cdc_last_commit(ref('cdc_table_columns'), marked=false).rows_commit -%}
    {%- set overrides = ref('cdc_column_type_overrides') -%}
    {%- set seeds = graph.nodes.values() | selectattr('resource_type', 'equalto', 'seed')
        | selectattr('name', 'equalto', overrides.identifier) | list -%}
    {%- if columns is none or seeds | length != 1 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set checksum = _cdc_seed_checksum(seeds[0]) -%}
    {#- loaded by this invocation (its seed node's memo: dbt's cached relation still shows the
        properties listed before the load), else as dbt's listing shows it -#}
    {%- if cdc_invocation_memo('seeds').get(overrides | string) != checksum and not cdc_relation_has_property(
            adapter.get_relation(overrides.database, overrides.schema, overrides.identifier), 'cdc.seed_checksum', checksum) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set code = cdc_code_digest() -%}
    {%- if code is none -%}
        {{ return(none) }}
    {%- endif -%}
    {#- and the vars that decide a decoding the metadata cannot tell -#}
    {{ return(local_md5(tojson([columns, checksum, code, var('cdc_debezium_binary_handling_mode', 'base64')]))) }}
{%- endmacro %}

{% macro cdc_typed_specs_state(key, view_names) -%}
    {#- What a build that created the typed views records of them (gold's database property
        cdc.typed_specs): the key they were decided from (cdc_typed_specs_key) and the names of
        the views, one digest. -#}
    {{ return(local_md5(key ~ '\n' ~ (view_names | sort | join('\n')))) }}
{%- endmacro %}

{% macro cdc_typed_specs_recorded(key) -%}
    {#- Whether the last build that created the typed views recorded `key` (cdc_typed_specs_key)
        and all of them are still there: gold's property cdc.typed_specs against gold's views
        (`show views`), those of dbt's models left out. A view dropped by hand, or one of a
        user's own in gold, makes the build read the specs and create what is missing. -#}
    {%- set recorded = cdc_database_property('gold', 'cdc.typed_specs') -%}
    {%- if recorded is none -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set models = graph.nodes.values() | selectattr('schema', 'equalto', 'gold') | map(attribute='alias') | list -%}
    {%- set views = cdc_gold_view_names() | reject('in', models) | list -%}
    {{ return(recorded == cdc_typed_specs_state(key, views)) }}
{%- endmacro %}
