{#
    One row per (source table, column) ever seen in a row image, with the vendor's type
    metadata of its latest change: the schema the typed gold views are generated from.
    A column added at the source appears here with the first change that carries it.
    Incremental MERGE: first_seen_order stays, the type follows the newest change. The SQL is
    cdc_table_column_rows (macros/gold/cdc_table_column_rows.sql), which an increment runs
    first to ask what it would change (cdc_table_column_change): usually nothing but each
    column's newest order, and then the table is left as it is and only the watermark is
    recorded (a row of meta.cdc_build_progress, far cheaper than the MERGE, whose source query
    is the question itself), which also leaves the typed columns and their views unread
    (cdc_typed_specs_key).

    The type comes from the newest change in which the column has a value: formats that type
    each value rather than each column (OMS Avro's precision, scale and charset sit in the
    value's entry) say less about a NULL, and a NULL must not turn decimal(20,4) into a string.
    Only a column that never had a value takes the newest metadata of all.
#}

{#-
    Incremental by a watermark its runs record (cdc_record_watermark): silver's own, which
    silver's parse recorded for silver's newest version (nothing in silver is newer), with that
    version's id. A run that finds silver's newest commit still the one recorded has nothing new
    and writes nothing (cdc_nothing_to_write); the others read the changes up to it. Without a
    recorded watermark (silver's newest commit is not its parse's, or a table an earlier version
    wrote), the watermark is the newest last_ingested_at stored, and the read is unbounded:
    reading a change twice changes nothing here.
-#}
{%- set recorded = {} %}
{%- set watermark = cdc_watermark('last_ingested_at', 'last_seen_order', recorded=recorded) if is_incremental() else none %}
{%- set silver_commit = cdc_last_commit(ref('cdc_parsed')) %}
{%- set up_to = silver_commit.mark.ingested_at if silver_commit.mark else none %}
{%- set unchanged = cdc_unchanged_since(recorded, silver_commit) %}
{#- what the new changes would change (cdc_table_column_change): nothing but the orders (the
    table is left as it is and the run records its watermark alone), new columns (the
    increment's MERGE), or a known column's type (every change is read again). Asked when the
    table's newest version has its recorded watermark (read, not scanned) and silver's
    watermark is known #}
{%- set change = cdc_table_column_change(cdc_table_column_rows(watermark, up_to))
    if is_incremental() and not unchanged and recorded.get('rows_commit') is not none and up_to is not none
    else 'columns' %}
{%- do cdc_record_watermark(up_to, {'upstream': silver_commit.id}) %}

{%- if not is_incremental() %}
    {%- do cdc_log_plan('first build: the columns of every change') %}
{%- elif unchanged %}
    {%- do cdc_log_plan('nothing new in silver since the version recorded here: nothing written') %}
{%- elif change == 'none' %}
    {%- do cdc_log_plan('the changes up to ' ~ up_to ~ ' bring no new column and no new type: the watermark alone is recorded') %}
{%- elif change == 'columns' %}
    {%- do cdc_log_plan('the changes after ' ~ (watermark or 'the start') ~ ': MERGE of the columns they carry') %}
{%- else %}
    {%- do cdc_log_plan('a known column may change type: every change is read again, MERGE') %}
{%- endif %}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='column_key',
    merge_update_condition='DBT_INTERNAL_SOURCE.last_seen_order > DBT_INTERNAL_DEST.last_seen_order',
    tblproperties={'delta.enableDeletionVectors': 'true'},
    post_hook="{{ cdc_write_progress() }}",
) }}

{% if unchanged or change == 'none' -%}
{#- nothing new, or nothing to change: no MERGE runs (cdc_nothing_to_write; with nothing to
    change, the post-hook records the watermark alone), and its source, empty, is the table's own
    columns: Spark analyses this for the MERGE's temporary view, which is cheaper than
    analysing the query below #}
select * from {{ this }}
where false
{{ cdc_nothing_to_write() }}
{%- else -%}
{{ cdc_table_column_rows(watermark if change == 'columns' else none, up_to) }}
{%- endif %}
