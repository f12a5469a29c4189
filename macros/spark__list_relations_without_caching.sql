{% macro spark__list_relations_without_caching(relation) %}
    {#-
        dbt-spark's listing of a schema's relations for dbt's cache (`show table extended`),
        without the typed views of gold. `show table extended` fetches every relation's metadata
        from the metastore one by one, and gold holds two typed views per source table, so they
        are most of what a listing of gold would fetch. dbt never needs those views in
        its cache: cdc_create_typed_views, which makes them, reads them itself and only when
        their definitions may have changed (cdc_typed_relations). A typed view is a view of
        gold whose name holds `__` (cdc_typed_view_name); dbt's own models are named cdc_*.
        Tables of gold (a typed table too wide for a view included) are listed as before.
    -#}
    {%- set pattern = '*' -%}
    {%- if relation.schema == 'gold' -%}
        {%- set views = cdc_gold_view_names() -%}
        {%- set kept = [] -%}
        {%- for name in cdc_gold_relation_names() -%}
            {%- if not (name in views and '__' in name) -%}
                {%- do kept.append(name) -%}
            {%- endif -%}
        {%- endfor -%}
        {#- nothing else: the listing of every relation, which is no longer than that -#}
        {%- set pattern = kept | join('|') if kept else '*' -%}
    {%- endif -%}
    {% call statement('list_relations_without_caching', fetch_result=True) -%}
        show table extended in {{ relation.schema }} like '{{ pattern }}'
    {%- endcall %}
    {% do return(load_result('list_relations_without_caching').table) %}
{% endmacro %}

{% macro cdc_gold_view_names() -%}
    {#- The names of gold's views (`show views`: one listing, no metadata per view). -#}
    {{ return(_cdc_gold_names('show views in gold')) }}
{%- endmacro %}

{% macro cdc_gold_relation_names() -%}
    {#- The names of gold's tables and views (`show tables`: one listing, no metadata per relation). -#}
    {{ return(_cdc_gold_names('show tables in gold')) }}
{%- endmacro %}

{% macro _cdc_gold_names(listing) -%}
    {#- The second column of `listing` (`show tables` / `show views`), temporary views left out. -#}
    {%- set names = [] -%}
    {%- for row in run_query(listing).rows -%}
        {%- if not row[2] -%}
            {%- do names.append(row[1]) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(names) }}
{%- endmacro %}
