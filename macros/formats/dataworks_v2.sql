{#
    dataworks-v2: the DataWorks 2.0 JSON message of OceanBase OMS (shared/formats/oceanbase-oms.txt,
    "JSON message format of DataWorks").

    - message: `version` "2.0", `schema` {source {dbType, dbVersion, dbName, schema, table},
      column [{name, type}], pk}, `payload` {before / after {data {col: value}}, op,
      timestamp {eventTime, systemTime, checkpointTime}, ddl {text}, scn}, `extend`;
    - op is case-sensitive: INSERT / UPDATE / DELETE (an update carries both images in one
      record); HEARTBEAT (a message of `version` and `payload` only); TRANSACTION_BEGIN /
      TRANSACTION_END / GTID / XACOMMIT / XAROLLBACK; DDL ops CREATE / ALTER / ERASE / QUERY /
      RENAME / CINDEX / DINDEX with ddl.text; TRUNCATE truncates the table - all mapped by the op
      seed; a null-value Kafka record is a tombstone control event;
    - order: `scn` ("an auto-increment ID") when it is a number; the examples send the string
      "null", and then Kafka partition / offset decide;
    - key: schema.pk (primary or unique key); a key column the row image does not hold
      quarantines the record ("no key"), since applying it would merge every row of the table
      into one; without pk the table is a multiset and an update also emits `<before image>`,
      the delete of its old row, ordered just before it;
    - values are kept as sent (DECIMAL plain or scientific, BLOB as base64, timestamps as
      <13 digits>.<9 digits>); column_types holds the schema.column types.
#}

{% macro parse_dataworks_v2(records, format_ids) -%}
    {%- set u = cdc_unmark_value -%}
    {%- set schema_struct -%}
        struct<source: struct<dbType: string, dbVersion: string, dbName: string, `schema`: string, `table`: string>,
        `column`: array<struct<name: string, type: string>>, pk: array<string>>
    {%- endset -%}
    {%- set payload_struct -%}
        struct<before: string, after: string, op: string, scn: string,
        `timestamp`: struct<eventTime: string, systemTime: string, checkpointTime: string>,
        ddl: struct<text: string>>
    {%- endset -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': 'x.row_index',
            'vendor_op': 'x.vendor_op',
            'source_database': 'e.source_database',
            'source_schema': 'e.source_schema',
            'source_table': 'e.source_table',
            'key_columns': 'e.key_columns',
            'before_values': cdc_image_map('e.before_json'),
            'after_values': cdc_image_map("case when x.vendor_op <> '<before image>' then e.after_json end"),
            'before_image': cdc_unmark_json('e.before_json'),
            'after_image': cdc_unmark_json("case when x.vendor_op <> '<before image>' then e.after_json end"),
            'column_types': 'e.column_types',
            'event_time': cdc_epoch_to_timestamp(u('e.pl.`timestamp`.eventTime')),
            'vendor_sequence': 'e.scn',
            'apply_order': cdc_apply_order('1', ['e.scn'], 'e.partition', 'e.offset', 'x.row_index'),
            'statement': u('e.pl.ddl.text'),
            'parse_error': 'e.parse_error',
        }) -%}
    with v2_messages as (

        select
            rec.*,
            from_json({{ cdc_mark_json('rec.value_text') }},
                'struct<version: string, `schema`: string, payload: string, extend: string, `_corrupt`: string>',
                map('columnNameOfCorruptRecord', '_corrupt')) as msg
        from {{ records }} as rec
        where rec.resolved_format in ('{{ format_ids | join("', '") }}')

    ),

    v2_fields as (

        select
            m.*,
            from_json(m.msg.`schema`, '{{ schema_struct }}') as sch,
            from_json(m.msg.payload, '{{ payload_struct }}') as pl
        from v2_messages as m

    ),

    v2_rows as (

        select
            f.*,
            {#- a null-value Kafka record (log compaction) changes nothing #}
            case when f.value is null then '<tombstone>' else {{ u('f.pl.op') }} end as op,
            {{ u('f.sch.source.dbName') }} as source_database,
            {{ u('f.sch.source.`schema`') }} as source_schema,
            {{ u('f.sch.source.`table`') }} as source_table,
            from_json(f.pl.before, 'struct<data: string>').data as before_json,
            from_json(f.pl.after, 'struct<data: string>').data as after_json,
            {#- the examples send the string "null": only a number orders anything #}
            case when {{ u('f.pl.scn') }} rlike '^[0-9]+$' then {{ u('f.pl.scn') }} end as scn,
            coalesce(array_distinct(filter(f.sch.pk, k -> k is not null)), array()) as key_columns
        from v2_fields as f

    ),

    v2_keyed as (

        select
            r.*,
            filter(r.key_columns, c -> not coalesce(map_contains_key({{ cdc_image_map(
                "case when r.op = 'DELETE' then r.before_json else r.after_json end"
            ) }}, c), true)) as missing_key_columns
        from v2_rows as r

    ),

    v2_judged as (

        select
            k.*,
            case
                when k.value is null then null
                when k.msg.`_corrupt` is not null or k.msg is null then 'invalid JSON'
                when k.pl is null then 'shape does not match ' || k.resolved_format || ': no payload'
                when k.op is null then 'shape does not match ' || k.resolved_format || ': no payload.op'
                when k.op in ('INSERT', 'UPDATE') and k.after_json is null
                    then 'shape does not match ' || k.resolved_format || ': ' || k.op || ' without payload.after.data'
                when k.op in ('UPDATE', 'DELETE') and k.before_json is null
                    then 'shape does not match ' || k.resolved_format || ': ' || k.op || ' without payload.before.data'
                {#- a key the row does not hold would merge every row of the table into one #}
                when k.op in ('INSERT', 'UPDATE', 'DELETE') and size(k.missing_key_columns) > 0
                    then 'no key: key column(s) ' || array_join(k.missing_key_columns, ', ')
                        || ' named by schema.pk are absent from the row image'
            end as parse_error,
            case when k.sch.`column` is not null then {{ _dataworks_column_types('k.sch.`column`') }}
            end as column_types
        from v2_keyed as k

    )

    select
        {{ cdc_parser_select(exprs) }}
    from v2_judged as e
    {#- a key-less update (multiset) also deletes its old row, ordered just before it #}
    lateral view inline(case
        when e.parse_error is null and e.op = 'UPDATE' and size(e.key_columns) = 0
            then array(
                named_struct('vendor_op', '<before image>', 'row_index', 0),
                named_struct('vendor_op', e.op, 'row_index', 1)
            )
        else array(named_struct('vendor_op', e.op, 'row_index', 0))
    end) x
{%- endmacro %}
