{#
    SPEC's gold contract: one row per live (source table, key), the current row as JSON: the
    current versions of gold.cdc_history (a key's open version, with a row: the stored
    versions' partition is_current, less those a closer has ended), as the view decides them
    (cdc_history_current_versions).

    A Delta table, not a view, so that an engine other than Spark (delta-rs, DuckDB, Trino,
    Polars, a BI tool reading the storage) opens it: written without deletion vectors unless
    the var cdc_current_state_deletion_vectors says otherwise (delta-rs' Arrow reader refuses a
    table with them), so a MERGE rewrites the files holding the rows it changes.

    Kept up to date by the keys each build's changes touch: an increment reads the changes the
    history consumed since this table's last write (its recorded watermark up to the
    history's), takes their keys (a key-changing update's old key too) and every key of a
    table that one of them truncated or that has no key, and MERGEs the current versions of
    those keys: a key that has none any more is deleted. Without a recorded watermark (a first
    build, a build stopped before its row) every key is taken. The history rebuilt alone
    (`--full-refresh` of cdc_history_versions) holds the same current versions, and this table
    is left as it is; rebuild both to rebuild both.
#}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key=['source_database', 'source_schema', 'source_table', 'pk', 'copy_number'],
    merge_null_safe_keys=true,
    merge_delete_condition='DBT_INTERNAL_SOURCE.row is null',
    tblproperties={'delta.enableDeletionVectors': 'true' if var('cdc_current_state_deletion_vectors') else 'false'},
    post_hook="{{ cdc_write_progress() }}",
) }}

{%- set own = cdc_last_commit(this) if is_incremental() else none %}
{%- if own is not none %}
    {#- the post-hook writes no row when the run leaves this version with this mark #}
    {%- do cdc_hand_over('progress_before', {'rows_commit': own.rows_commit, 'mark': own.mark}) %}
{%- endif %}
{%- set history_commit = cdc_last_commit(ref('cdc_history_versions')) %}
{%- set recorded = own.mark if own is not none and own.mark is not none else {} %}
{%- set after = recorded.get('ingested_at') %}
{%- set up_to = history_commit.mark.ingested_at if history_commit.mark else none %}
{%- set unchanged = cdc_unchanged_since(recorded, history_commit) or (after is not none and after == up_to) %}
{%- set every_key = not is_incremental() or after is none or up_to is none %}
{%- do cdc_record_watermark(up_to, {'upstream': history_commit.id}) %}

{%- if not is_incremental() %}
    {%- do cdc_log_plan('first build: every current version') %}
{%- elif unchanged %}
    {%- do cdc_log_plan('the history holds nothing new since the version recorded here: nothing written') %}
{%- elif every_key %}
    {%- do cdc_log_plan('no recorded watermark: the current versions of every key, MERGE') %}
{%- else %}
    {%- do cdc_log_plan('the keys of the changes after ' ~ after ~ ' up to ' ~ up_to ~ ': MERGE of their current versions') %}
{%- endif %}

{#- SQL: the row `candidate` (a stored version, a stored row) is of a touched key or table -#}
{%- set touched -%}
exists (
        select 1 from touched_keys
        where touched_keys.source_database <=> candidate.source_database
            and touched_keys.source_schema <=> candidate.source_schema
            and touched_keys.source_table = candidate.source_table
            and touched_keys.pk = candidate.pk
    ) or exists (
        select 1 from touched_tables
        where touched_tables.source_database <=> candidate.source_database
            and touched_tables.source_schema <=> candidate.source_schema
            and touched_tables.source_table = candidate.source_table
    )
{%- endset %}

{% if is_incremental() and unchanged -%}
select * from {{ this }}
where false
{{ cdc_nothing_to_write() }}
{%- else -%}
{#- the refs the branches below take, for dbt's graph, which parses the first build's; and the
    history view, so that selecting +cdc_current_state builds it and tests it -#}
-- depends_on: {{ ref('cdc_history') }}
-- depends_on: {{ ref('cdc_changes') }}
with
{%- if not every_key %}

touching_changes as (

    select source_database, source_schema, source_table, pk, before_pk, op, key_columns
    from {{ ref('cdc_changes') }}
    where {{ cdc_newer_than('ingested_at', after) }}
        and ingested_at <= timestamp '{{ up_to }}'

),

touched_tables as (

    {#- a truncate touches every key of its table; a table without a key is a multiset whose
        rows are their own keys, counted again whole #}
    select distinct source_database, source_schema, source_table
    from touching_changes
    where op = 't' or not coalesce(size(key_columns) > 0, false)

),

touched_keys as (

    {#- a change's key, and a key-changing update's old key, of the other tables #}
    select distinct changes.source_database, changes.source_schema, changes.source_table, changes.touched_pk as pk
    from (
        select source_database, source_schema, source_table, touched_pk
        from touching_changes
        lateral view explode(array(pk, before_pk)) keys as touched_pk
    ) as changes
    left anti join touched_tables
        on changes.source_database <=> touched_tables.source_database
        and changes.source_schema <=> touched_tables.source_schema
        and changes.source_table = touched_tables.source_table
    where changes.touched_pk is not null

),

touched_versions as (

    {#- every version of the touched keys: a key's current version is decided from its own
        versions alone #}
    select * from {{ ref('cdc_history_versions') }} as candidate
    where {{ touched }}

),
{%- endif %}

current_versions as (

    {{ cdc_history_current_versions(ref('cdc_history_versions') if every_key else 'touched_versions') }}

),

final as (

    select
        source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        row,
        op as last_op,
        valid_from as last_event_time,
        vendor_sequence,
        apply_order,
        change_id,
        unknown_columns,
        copy_number
    from current_versions

)
{%- if is_incremental() %},

gone as (

    {#- the stored rows of the touched keys (every one without a watermark) that are current no
        more: the MERGE deletes them (a source row without a row, merge_delete_condition) #}
    select * except (row), cast(null as string) as row
    from {{ this }} as candidate
    {%- if not every_key %}
    where {{ touched }}
    {%- endif %}

),

gone_rows as (

    select gone.*
    from gone
    left anti join final
        on gone.source_database <=> final.source_database
        and gone.source_schema <=> final.source_schema
        and gone.source_table = final.source_table
        and gone.pk = final.pk
        and gone.copy_number = final.copy_number

)

select * from final
union all
select
    source_format, source_database, source_schema, source_table, pk, row, last_op, last_event_time,
    vendor_sequence, apply_order, change_id, unknown_columns, copy_number
from gone_rows
{%- else %}

select * from final
{%- endif %}
{%- endif %}
