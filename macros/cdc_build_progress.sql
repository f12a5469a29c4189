{#
    The build's incremental state, as data: meta.cdc_build_progress, one row per write of an
    incremental model (silver.cdc_parsed, gold.cdc_history_versions, gold.cdc_table_columns).
    Each row says which version of the model's table it describes and what that version holds:
    the newest ingest time consumed (the watermark), the upstream table and the Delta version
    read up to, and the model's counters (appends since the last compaction, unsettled
    appends, truncates consumed, newest apply order per source table), in `progress` as JSON.

    A model's compile reads the row of its table's newest version that wrote rows
    (cdc_last_commit); its post-hook cdc_write_progress appends the row of the version its write
    made. The row is written after the table's own commit, so a build stopped between the two
    leaves a newest version without a row: the next build then reads the table itself for its
    watermark (cdc_watermark's scan), which is exact, only slower once.

    Anyone can read it: `select * from meta.cdc_build_progress order by recorded_at desc`.
#}

{% macro cdc_build_progress_relation() -%}
    {{ return(api.Relation.create(schema='meta', identifier='cdc_build_progress', type='table')) }}
{%- endmacro %}

{% macro cdc_require_build_progress() -%}
    {#- on-run-start: the progress table exists (created empty by a lakehouse's first build, and
        by the first build after an upgrade from a version that kept the watermark elsewhere) -#}
    {%- if execute and flags.WHICH in ('build', 'run') -%}
        {%- do run_query('create schema if not exists meta') -%}
        {%- do run_query(
            'create table if not exists ' ~ cdc_build_progress_relation() ~ ' ('
            ~ " model_table string not null comment 'the incremental model''s table',"
            ~ " table_version bigint not null comment 'the Delta version of that table the row describes',"
            ~ " table_committed_at string not null comment 'that version''s commit time (a table created again counts its versions from 0 again)',"
            ~ " watermark string comment 'the newest ingested_at the version holds (consumed from upstream)',"
            ~ " upstream_table string comment 'the table the model reads new records from',"
            ~ " upstream_version bigint comment 'the Delta version of upstream_table read up to',"
            ~ " progress string not null comment 'everything the model records for its next run, as JSON',"
            ~ " invocation_id string comment 'the dbt invocation that wrote the row',"
            ~ " recorded_at timestamp not null comment 'when the row was written'"
            ~ ") using delta comment 'Incremental state of the models: one row per write (macros/cdc_build_progress.sql)'"
        ) -%}
        {%- do cdc_invocation_memo('progress').update({'exists': true}) -%}
    {%- endif -%}
{%- endmacro %}

{% macro _cdc_build_progress_exists() -%}
    {#- whether meta.cdc_build_progress exists, asked once per invocation (a compile outside a
        build, before any build of this version, finds none) -#}
    {%- set memo = cdc_invocation_memo('progress') -%}
    {%- if 'exists' not in memo -%}
        {%- set found = run_query("show schemas like 'meta'").rows | length > 0
            and run_query("show tables in meta like 'cdc_build_progress'").rows | length > 0 -%}
        {%- do memo.update({'exists': found}) -%}
    {%- endif -%}
    {{ return(memo['exists']) }}
{%- endmacro %}

{% macro cdc_recorded_progress(commit_id) -%}
    {#- What the model recorded for the version `commit_id` (cdc_commit_id: table, version,
        commit time) of its table: the mapping cdc_record_watermark handed over, newest first
        when several runs described one version (a run with nothing to write records its new
        watermark for the version it leaves); none when no row describes that version -#}
    {%- if not execute or commit_id is none or not _cdc_build_progress_exists() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set rows = run_query(
        'select progress from ' ~ cdc_build_progress_relation()
        ~ ' where model_table = ' ~ cdc_sql_string(commit_id.table)
        ~ ' and table_version = ' ~ commit_id.version
        ~ ' and table_committed_at = ' ~ cdc_sql_string(commit_id.committed_at)
        ~ ' order by recorded_at desc limit 1'
    ).rows -%}
    {{ return(fromjson(rows[0]['progress']) if rows else none) }}
{%- endmacro %}

{% macro cdc_write_progress() -%}
    {#-
        Post-hook of an incremental model: the row of the version its write made, with what its
        compile recorded (cdc_record_watermark). A run that wrote nothing records for the
        version it leaves what that version's row said, updated with what the run recorded
        (counters it did not restate stay), and only when that differs (a build with nothing
        new writes nothing here either). The commit, with its mark, is then the one the
        later nodes of this invocation take for the table (cdc_remember_commit).
    -#}
    {%- set mark = cdc_handed('progress') if execute else none -%}
    {%- if mark is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set before = cdc_handed('progress_before') or {} -%}
    {%- set commit = cdc_last_commit(this, written=true, marked=false) -%}
    {%- if commit.rows_commit is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- if before.get('rows_commit') == commit.rows_commit and before.get('mark') is mapping -%}
        {%- set kept = {} -%}
        {%- do kept.update(before.mark) -%}
        {%- do kept.update(mark) -%}
        {%- set mark = kept -%}
    {%- endif -%}
    {%- if before.get('rows_commit') != commit.rows_commit or before.get('mark') != mark -%}
        {%- set upstream = mark.get('upstream') or {} -%}
        {%- do run_query(
            'insert into ' ~ cdc_build_progress_relation() ~ ' values ('
            ~ cdc_sql_string(this | string) ~ ', ' ~ commit.rows_commit.version ~ ', '
            ~ cdc_sql_string(commit.rows_commit.committed_at) ~ ', '
            ~ (cdc_sql_string(mark.ingested_at) if mark.ingested_at else 'null') ~ ', '
            ~ (cdc_sql_string(upstream.table) if upstream.get('table') else 'null') ~ ', '
            ~ (upstream.version if upstream.get('version') is not none else 'null') ~ ', '
            ~ cdc_sql_string(tojson(mark)) ~ ', ' ~ cdc_sql_string(invocation_id) ~ ', current_timestamp())'
        ) -%}
    {%- endif -%}
    {%- do commit.update({'mark': mark}) -%}
    {%- do cdc_remember_commit(this, commit) -%}
    {{ return('') }}
{%- endmacro %}
