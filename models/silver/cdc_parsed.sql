{#
    Every bronze record, parsed once by the parser of its format, as canonical rows:
    record_kind 'change' (one row per row-level change), 'control' (DDL, heartbeat,
    transaction marker, tombstone) or 'quarantine' (with the reason). cdc_changes,
    cdc_control_events and cdc_quarantine are views of it. Incremental: a run parses only
    the bronze records landed after the newest one already here. The CTEs that parse are
    cdc_parsed_rows (macros/cdc_parsed_rows.sql); the messages a fast parser does not read are
    parsed by the SQL parser of their format in the post-hook cdc_parse_leftovers.
#}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    partition_by=['record_kind'],
    on_schema_change='append_new_columns',
    tblproperties={
        'delta.dataSkippingStatsColumns': 'ingested_at,source_format,source_table,kafka_topic',
    },
    pre_hook=["{{ cdc_compact_before_write('silver_compaction') }}"],
    post_hook=["{{ cdc_parse_leftovers() }}", "{{ cdc_write_progress() }}"],
) }}
{#- Statistics only on the columns readers filter by: downstream models skip files by
    ingested_at, and min/max of the long image and raw-value columns would only cost time. #}

{#-
    Routed once, at compile time (cdc_new_records): the formats of the new records, the format
    of each topic, and which parsers are needed (cdc_parsed_rows compiles in only those);
    nothing is detected twice. The watermarks are
    literals, so Delta skips the bronze files parsed before (a scalar subquery would not).
-#}
{%- set plan = cdc_new_records(is_incremental()) -%}
{#- the write's commit (the first build's create too) records what it consumed: the next run
    reads it, not max(ingested_at) #}
{#- and the bronze commit it read up to (a next run that finds it still bronze's newest has
    nothing new to read, and reads nothing) #}
{#- and what the topic patterns gave the topics it routed, which the next run reuses while the
    patterns are the same (cdc_new_records) #}
{#- and the code it ran (cdc_code_digest), whose columns the table then has -#}
{%- set code = cdc_code_digest() if execute else none -%}
{%- set consumed = {'upstream': plan.upstream, 'code': code} -%}
{%- if plan.seeded is not none -%}
    {%- do consumed.update({'seeded': plan.seeded}) -%}
{%- endif -%}
{#- and how many appends came since the table was last compacted: every
    cdc_silver_compact_every of them, a pre-hook compacts the table before the append
    (macros/utils/cdc_compaction.sql) -#}
{%- if is_incremental() and plan.up_to is not none and not plan.none_new -%}
    {%- set compaction = cdc_silver_compaction(plan.recorded) -%}
    {%- do consumed.update({'writes_since_compaction': compaction.writes}) -%}
    {%- do cdc_hand_over('silver_compaction', compaction) -%}
{%- endif -%}
{%- do cdc_record_watermark(plan.up_to or plan.after, consumed) -%}
{%- if plan.none_new %}
    {%- do cdc_log_plan('nothing landed in bronze since ' ~ (plan.after or 'the start') ~ ': nothing to parse') -%}
{%- else %}
    {%- do cdc_log_plan(
        'parsing the bronze records ingested after ' ~ (plan.after or 'the start') ~ ' up to ' ~ (plan.up_to or 'the newest')
        ~ '; formats: ' ~ ((plan.formats or ['any: every parser']) | sort | join(', '))
        ~ ('' if plan.unparsable == 0 else '; some records have no parser: quarantined')
        ~ '; append'
    ) -%}
{%- endif %}
{%- if plan.none_new and code is not none and plan.code == code %}
{#- nothing new, and the table's last write ran this code, so the table has this code's
    columns: the temporary view dbt creates for the write (which on_schema_change compares with
    the table) needs no more than the table's own, so Spark need not analyse the whole parse
    for it. After an upgrade it still does, until a write records the new code #}
select * from {{ this }}
where false
{{ cdc_nothing_to_write() }}
{%- else %}
with new_records as (

    select * from {{ source('bronze', 'kafka_records') }}
    where true
    {%- if plan.after is not none %}
        and {{ cdc_newer_than('ingested_at', plan.after) }}
    {%- elif is_incremental() %}
        and ingested_at > (
            select coalesce(max(ingested_at), timestamp '1970-01-01') from {{ this }}
        )
    {%- endif %}
    {%- if plan.none_new %}
        and false
    {%- elif plan.up_to is not none %}
        and ingested_at <= timestamp '{{ plan.up_to }}'
    {%- endif %}

),

{{ cdc_parsed_rows('new_records', plan) }}

select * from final
{%- if plan.none_new %}
{{ cdc_nothing_to_write() }}
{%- endif %}
{%- endif %}
