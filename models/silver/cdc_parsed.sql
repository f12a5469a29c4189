{#
    Every bronze record, parsed once by the parser of its format, as canonical rows:
    record_kind 'change' (one row per row-level change), 'control' (DDL, heartbeat,
    transaction marker, tombstone) or 'quarantine' (with the reason). cdc_changes,
    cdc_control_events and cdc_quarantine are views of it. Incremental: a run parses only
    the bronze records landed after the newest one already here.
#}

{{ config(
    materialized='incremental',
    incremental_strategy='append',
    partition_by=['record_kind'],
    on_schema_change='append_new_columns',
    tblproperties={
        'delta.dataSkippingStatsColumns': 'ingested_at,source_format,source_table,kafka_topic',
    },
    post_hook="{{ cdc_forget_watermark() }}",
) }}
{#- Statistics only on the columns readers filter by: downstream models skip files by
    ingested_at, and min/max of the long image and raw-value columns would only cost time. #}

{#-
    Routed once, at compile time (cdc_new_records): the formats of the new records, the format
    of each topic, and which parsers are needed. Only those parsers are compiled in (the plan
    of all fifteen takes Spark tens of seconds to analyse, even for a handful of records); each
    reads only the bronze files of its own topics; nothing is detected twice. The watermarks are
    literals, so Delta skips the bronze files parsed before (a scalar subquery would not).
-#}
{%- set parsed_formats = [] -%}
{%- for format_id, parser in cdc_formats().items() if context.get(parser) is not none -%}
    {%- do parsed_formats.append(format_id) -%}
{%- endfor %}
{%- set plan = cdc_new_records(is_incremental()) -%}
{#- the write's commit (the first build's create too) records what it consumed: the next run
    reads it, not max(ingested_at) #}
{%- do cdc_record_watermark(plan.up_to or plan.after) -%}
{%- set parsers = {} -%}
{%- for format_id, parser in cdc_formats().items() if format_id in parsed_formats -%}
    {%- if plan.formats is none or format_id in plan.formats -%}
        {%- do parsers.setdefault(parser, []).append(format_id) -%}
    {%- endif -%}
{%- endfor %}

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

routed as (

    {{ cdc_route_records('new_records', plan.topic_formats, detect=plan.mixed) }}

),
{%- for parser, format_ids in parsers.items() %}

records_for_{{ parser }} as (

    {#- the topic test first: every branch scans all new bronze records, and the UTF-8 check
        (a pass over the bytes) is then only paid for this parser's own records #}
    select * from routed
    where
        {%- set topics = [] %}
        {%- for format_id in format_ids %}
            {%- do topics.extend(plan.parser_topics.get(format_id, [none])) %}
        {%- endfor %}
        {%- if topics and none not in topics %}
        topic in ({% for topic in topics %}{{ cdc_sql_string(topic) }}{{ ", " if not loop.last }}{% endfor %})
        and
        {%- endif %}
        (value is null or value_is_utf8)

),

{%- set fast_parser = cdc_fast_parsers().get(parser) %}
{#- the SQL parser is left out when the routing query saw the fast parser read every record
    of these formats #}
{%- set sql_needed = [not fast_parser] %}
{%- for format_id in format_ids if fast_parser %}
    {%- do sql_needed.append(plan.left_to_sql.get(format_id, 1) > 0) %}
{%- endfor %}
{%- if fast_parser %}

fast_parsed_by_{{ parser }} as (

    {#- the common message of the format read once, in the JVM; null where the SQL parser
        must read it. Its own projection, referenced three times below, so that Spark runs it
        once per record. #}
    select
        * except (fast),
        case when resolved_format in ('{{ format_ids | join("', '") }}') then
            {{ fast_parser }}(value_text, key_text, topic, `partition`, `offset`)
        end as fast
    from records_for_{{ parser }}

),

{%- if sql_needed | max %}

left_to_sql_{{ parser }} as (

    {#- the SQL parser sees no text where the fast parser has read the message: its
        expressions then work on nulls, for nothing, and give way to the fast row #}
    select
        * except (value_text, key_text),
        case when fast is null then value_text end as value_text,
        case when fast is null then key_text end as key_text
    from fast_parsed_by_{{ parser }}

),
{%- endif %}
{%- endif %}

parsed_by_{{ parser }} as (

    {%- if not sql_needed | max %}
    {#- a record the fast parser leaves after all (it read them all when the run was
        planned) is quarantined with that reason, never lost #}
    {%- set exprs = cdc_record_passthrough('f') %}
    {%- do exprs.update({
        'row_index': '0',
        'parse_error': "'the fast parser " ~ fast_parser ~ " left this record, though it read it when "
            ~ "the run was planned; build again with the var cdc_fast_parsers set to false'",
    }) %}
    select
        {{ cdc_parser_select(exprs) }}
    from fast_parsed_by_{{ parser }} as f
    where f.resolved_format in ('{{ format_ids | join("', '") }}')
    {%- else %}
    {{ context[parser](('left_to_sql_' if fast_parser else 'records_for_') ~ parser, format_ids) }}
    {%- endif %}

),
{%- endfor %}

unparsable as (

    {%- set known_formats = "'" ~ (cdc_formats().keys() | join("', '")) ~ "'" %}
    {%- set exprs = cdc_record_passthrough('routed') %}
    {%- do exprs.update({
        'row_index': '0',
        'apply_order': cdc_apply_order('1', [], 'routed.partition', 'routed.offset', '0'),
        'parse_error': "case
            when value is not null and not value_is_utf8 then 'value is not valid UTF-8'
            when resolved_format like 'ambiguous:%' then 'ambiguous format: the message could be any of '
                || substr(resolved_format, 11) || '; set --format at ingest or a cdc_topic_formats pattern'
            when resolved_format is null then 'unknown format: none given at ingest, no cdc_topic_formats '
                || 'pattern matches the topic, and the message shape matches no known format'
            when resolved_format in (" ~ known_formats ~ ")
                then 'no parser: format ' || resolved_format || ' is not supported yet'
            else 'unknown format ' || resolved_format || ': not a format id of cdc-lakehouse'
        end",
    }) %}
    select
        {{ cdc_parser_select(exprs) }}
    from routed
    where
        (routed.value is not null and not routed.value_is_utf8)
        or routed.resolved_format is null
        or routed.resolved_format not in ('{{ parsed_formats | join("', '") }}')

),

unioned as (

    {%- for parser in parsers %}
    select * from parsed_by_{{ parser }}
    union all
    {%- endfor %}
    select * from unparsable
    {#- no record needs the unparsable branch: it is kept for its columns, reading nothing #}
    {%- if plan.unparsable == 0 %}
    where false
    {%- endif %}

),

op_codes as (

    select * from {{ ref('cdc_op_codes') }}

),

key_overrides as (

    select
        source_database,
        source_table,
        split(key_columns, '[|]') as key_columns
    from {{ ref('cdc_key_overrides') }}

),

classified as (

    select
        unioned.*,
        op_codes.op,
        op_codes.record_kind as coded_kind,
        op_codes.control_kind,
        {#- each name once and none null: the key's map below would fail the whole run #}
        array_except(
            coalesce(key_overrides.key_columns, unioned.key_columns), array(cast(null as string))
        ) as effective_key_columns,
        case when op_codes.op = 'd' then unioned.before_values else unioned.after_values end
            as key_image
    from unioned
    left join op_codes
        on
            unioned.source_format = op_codes.format
            and unioned.vendor_op = op_codes.vendor_op
    left join key_overrides
        on
            unioned.source_database <=> key_overrides.source_database
            and unioned.source_table = key_overrides.source_table

),

keyed as (

    select
        *,
        {#- a key of one column (most tables) without the lambda: Spark runs lambdas outside
            its generated code #}
        case
            when size(effective_key_columns) = 1 then {{ cdc_map_to_json(
                "map(effective_key_columns[0], coalesce(
                    element_at(key_image, effective_key_columns[0]), element_at(key_values, effective_key_columns[0])
                ))"
            ) }}
            when size(effective_key_columns) > 0 then {{ cdc_map_to_json(
                "map_from_arrays(effective_key_columns, transform(effective_key_columns,
                    k -> coalesce(element_at(key_image, k), element_at(key_values, k))))"
            ) }}
            {#- no key anywhere: the whole row is its identity (multiset semantics) -#}
            else {{ cdc_map_to_json('key_image') }}
        end as pk,
        case
            when op = 'u' and size(effective_key_columns) = 1 and before_values is not null
                then {{ cdc_map_to_json(
                    "map(effective_key_columns[0], element_at(before_values, effective_key_columns[0]))"
                ) }}
            when op = 'u' and size(effective_key_columns) > 0 and before_values is not null
                then {{ cdc_map_to_json(
                    "map_from_arrays(effective_key_columns, transform(effective_key_columns,
                        k -> element_at(before_values, k)))"
                ) }}
            {#- no key: the update replaces its before row in the multiset #}
            when op = 'u' and before_values is not null then {{ cdc_map_to_json('before_values') }}
        end as before_pk
    from classified

),

judged as (

    select
        sha2(concat_ws('|', kafka_topic, kafka_partition, kafka_offset, row_index), 256) as record_id,
        case
            when parse_error is not null or coded_kind is null then 'quarantine'
            when coded_kind = 'change' and source_table is null then 'quarantine'
            when coded_kind = 'change' and op <> 't' and pk is null then 'quarantine'
            else coded_kind
        end as record_kind,
        control_kind,
        case
            when parse_error is not null then parse_error
            when coded_kind is null
                then 'unknown op ' || coalesce('"' || vendor_op || '"', '(none)')
                    || ' for format ' || source_format
            when coded_kind = 'change' and source_table is null then 'no table: the message names no source table'
            when coded_kind = 'change' and op <> 't' and pk is null
                then 'no key: neither the row image nor the record key holds the key columns'
        end as quarantine_reason,
        source_format,
        source_database,
        source_schema,
        source_table,
        op,
        vendor_op,
        effective_key_columns as key_columns,
        pk,
        case when before_pk <> pk then before_pk end as before_pk,
        before_image,
        after_image,
        column_types,
        event_time,
        vendor_sequence,
        apply_order,
        transaction_id,
        statement,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        kafka_timestamp,
        row_index,
        raw_value,
        raw_value_base64,
        raw_key,
        ingested_at,
        batch_id,
        current_timestamp() as parsed_at
    from keyed

),

final as (

    {#- the raw message is kept only where it is needed: records that could not be understood #}
    select
        * except (raw_value, raw_value_base64, raw_key, parsed_at),
        case when record_kind = 'quarantine' then raw_value end as raw_value,
        case when record_kind = 'quarantine' then raw_value_base64 end as raw_value_base64,
        case when record_kind = 'quarantine' then raw_key end as raw_key,
        parsed_at
    from judged

)

select * from final
