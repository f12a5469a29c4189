{#
    The project's views (bronze.kafka_topic_offsets, silver's and gold's views) are created again
    only when their SQL changed (the materialization `view` below). dbt-spark replaces every view
    at every build, a metastore write each even when the view's text is the same. A view here
    remembers a digest of the statement that created it (property cdc.sql_digest; its SQL,
    comments and the form of the statement), which dbt's listing of the schema at the start of
    the run already shows: an unchanged view costs no statement at all. `--full-refresh` creates
    it anyway. persist_docs works as with dbt-spark's views.

    A view is created WITH SCHEMA EVOLUTION: its columns follow the tables it reads, so a view
    left as it is still shows a column that an upgrade added to a table below it (with the
    default binding, Spark would keep the columns the view had when it was created).
#}

{% materialization view, adapter='spark' -%}
    {%- set target_relation = this.incorporate(type='view') -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set grant_config = config.get('grants') -%}
    {#- as dbt-spark's view: column comments when persist_docs asks for them (their names read
        from the query), the model's description as the view's comment -#}
    {%- set definition -%}
        {%- if config.persist_column_docs() %}
            ({{ get_persist_docs_column_list(model.columns, get_columns_in_query(sql)) }})
        {%- endif %}
            with schema evolution
            {{ comment_clause() }}
    {%- endset -%}
    {%- set digest = local_md5(definition ~ '\nas\n' ~ sql) -%}
    {%- set unchanged = existing is not none and existing.is_view and not should_full_refresh()
        and cdc_relation_has_property(existing, 'cdc.sql_digest', digest) -%}

    {{ run_hooks(pre_hooks) }}

    {%- if existing is not none and existing.is_table -%}
        {{ handle_existing_table(should_full_refresh(), existing) }}
    {%- endif -%}

    {%- if unchanged -%}
        {% call noop_statement('main', 'OK', 'OK') -%}
            -- unchanged since it was created: cdc.sql_digest {{ digest }}
        {%- endcall %}
    {%- else -%}
        {% call statement('main') -%}
            create or replace view {{ target_relation }}
            {{ definition }}
            tblproperties ('cdc.sql_digest' = '{{ digest }}')
            as
            {{ sql }}
        {%- endcall %}
        {%- do apply_grants(target_relation, grant_config, should_revoke=should_revoke(existing is not none and existing.is_view, full_refresh_mode=True)) -%}
    {%- endif -%}

    {{ run_hooks(post_hooks) }}

    {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}
