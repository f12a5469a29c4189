{#
    A Delta table that is re-created only when its SQL changed. gold.cdc_typed_columns selects
    from an inline table of literals (the decided types), so the same SQL gives the same rows:
    while no column or type changed, rewriting it is a Delta commit that every build,
    increments included, would pay for nothing. The table remembers a digest of the SQL
    it was created from (table property cdc.sql_digest); `--full-refresh` re-creates it anyway.
    Hooks run either way (the typed views' post-hook decides for each view itself).

    A model that knows, before it computes its SQL, that its rows are those already stored hands
    over 'unchanged' (cdc_hand_over: why, as text) and compiles to a select of its own table:
    the table is then left as it is without its SQL (gold.cdc_typed_columns, whose SQL needs a
    query of the table columns, while the inputs of that query are unchanged).
#}

{% materialization cdc_table_if_changed, adapter='spark' %}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- set existing = adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) -%}
    {%- set digest = local_md5(compiled_code) -%}
    {%- set known = cdc_handed('unchanged') -%}
    {%- set unchanged = false -%}
    {%- if existing is not none and existing.is_table and not should_full_refresh() -%}
        {%- set unchanged = known is not none or cdc_table_property(existing, 'cdc.sql_digest') == digest -%}
    {%- elif existing is not none and not existing.is_table -%}
        {{ adapter.drop_relation(existing) }}
    {%- endif -%}

    {{ run_hooks(pre_hooks) }}

    {%- call statement('main') -%}
        {%- if unchanged and known is not none %}
        -- unchanged: {{ known }}
        select 1
        {%- elif unchanged %}
        -- unchanged since it was created: cdc.sql_digest {{ digest }}
        select 1
        {%- else %}
        create or replace table {{ target_relation }}
        using delta
        tblproperties ('cdc.sql_digest' = '{{ digest }}')
        as
        {{ compiled_code }}
        {%- endif %}
    {%- endcall -%}

    {% do persist_docs(target_relation, model) %}

    {{ run_hooks(post_hooks) }}

    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
