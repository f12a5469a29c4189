{#
    dataworks: DataWorks real-time sync to Kafka (shared/formats/dataworks-realtime-sync.txt;
    the "aliyun" samples of Apache Paimon are this format).

    - message: `schema` {dataColumn [{name, type}], primaryKey, source {dbType, dbName,
      schemaName, tableName}}, `payload` {before / after {dataColumn {col: value}}, sequenceId,
      scn, op, timestamp {eventTime, systemTime, checkpointTime}, ddl {text, ddlMeta}}, `version`;
    - op is case-sensitive: INSERT, UPDATE_BEFOR (the vendor's spelling), UPDATE_AFTER, DELETE;
      MHEARTBEAT; TRANSACTION_BEGIN / TRANSACTION_END / GTID / XACOMMIT / XAROLLBACK; DDL ops
      CREATE / ALTER / ERASE / QUERY / RENAME / CINDEX / DINDEX; TRUNCATE (truncates the table) -
      all mapped by the op seed; a null-value Kafka record is a tombstone control event;
    - an update is either ONE record (op UPDATE_AFTER with before and after) or TWO records
      sharing a sequenceId: UPDATE_BEFOR (before only) + UPDATE_AFTER (after only). The two-record
      form becomes one canonical update: the UPDATE_AFTER carries the before image of its
      UPDATE_BEFOR half, found in the same run or among the halves parsed by earlier runs; the
      UPDATE_BEFOR itself is a control event (kind update_before) and never deletes anything.
      Only when the UPDATE_BEFOR arrives after its UPDATE_AFTER was applied without it, it becomes
      the change `<late UPDATE_BEFOR>` (a delete of its before key ordered just before the
      UPDATE_AFTER): it removes the old key of a key-changing update and is a no-op otherwise;
    - sequenceId orders changes; `-1` marks full-load rows, which sort before every incremental
      change (phase 0); the two halves of a split update share the sequenceId, the before half
      sorts first;
    - key: schema.primaryKey; without one, the hidden row-id columns of key-less tables
      (`#alibaba_rds_row_id#` of RDS MySQL, `_drds_implicit_id_` of PolarDB-X, `__pk_increment`
      of OceanBase, `rowid` of Oracle sources); without those the table is a multiset, and an
      update also emits `<before image>`, the delete of the old row;
    - values are kept as sent: DATE as epoch milliseconds (negative before 1970), BYTES as
      base64, DECIMAL as a JSON string under type DOUBLE (SPEC known slips); column_types holds
      the dataColumn types;
    - event_time: eventTime, or systemTime for full-load rows (their eventTime is -1).
#}

{% macro _dataworks_hidden_key_columns() -%}
    {#- Row-id columns that DataWorks adds to tables without a primary key. -#}
    {{ return(['#alibaba_rds_row_id#', '_drds_implicit_id_', '__pk_increment']) }}
{%- endmacro %}

{% macro _dataworks_column_types(columns) -%}
    {#-
        [{name, type}] -> {"col": {"type": "..."}} JSON text. Names are de-duplicated first:
        map_from_arrays fails the whole run on a duplicate or null key.
    -#}
    to_json(map_from_arrays(
        filter(array_distinct(transform({{ columns }}, c -> c.name)), n -> n is not null),
        transform(
            filter(array_distinct(transform({{ columns }}, c -> c.name)), n -> n is not null),
            n -> named_struct('type', {{ cdc_unmark_value('filter(' ~ columns ~ ', c -> c.name = n)[0].type') }})
        )
    ))
{%- endmacro %}

{% macro parse_dataworks(records, format_ids) -%}
    {%- set u = cdc_unmark_value -%}
    {%- set formats = "'" ~ (format_ids | join("', '")) ~ "'" -%}
    {%- set schema_struct -%}
        struct<dataColumn: array<struct<name: string, type: string>>, primaryKey: array<string>,
        source: struct<dbType: string, dbVersion: string, dbName: string, schemaName: string, tableName: string>>
    {%- endset -%}
    {%- set payload_struct -%}
        struct<before: string, after: string, sequenceId: string, scn: string, op: string,
        `timestamp`: struct<eventTime: string, systemTime: string, checkpointTime: string>,
        ddl: struct<text: string, ddlMeta: string>>
    {%- endset -%}
    {%- set pair_key = ['topic', 'source_database', 'source_schema', 'source_table', 'sequence_id'] -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': 'e.row_index',
            'vendor_op': 'e.vendor_op',
            'source_database': 'e.source_database',
            'source_schema': 'e.source_schema',
            'source_table': 'e.source_table',
            'key_columns': 'e.key_columns',
            'before_values': cdc_image_map('e.before_json'),
            'after_values': cdc_image_map('e.row_after_json'),
            'before_image': cdc_unmark_json('e.before_json'),
            'after_image': cdc_unmark_json('e.row_after_json'),
            'column_types': 'e.column_types',
            'event_time': 'e.event_time',
            'vendor_sequence': 'e.sequence_id',
            'apply_order': cdc_apply_order(
                'e.phase', ['e.sequence_id', 'e.half'], 'e.partition', 'e.offset', 'e.row_index'),
            'statement': 'e.ddl_text',
            'parse_error': 'e.parse_error',
        }) -%}
    with dw_messages as (

        select
            rec.*,
            from_json({{ cdc_mark_json('rec.value_text') }},
                'struct<`schema`: string, payload: string, version: string, `_corrupt`: string>',
                map('columnNameOfCorruptRecord', '_corrupt')) as msg
        from {{ records }} as rec
        where rec.resolved_format in ({{ formats }})

    ),

    dw_fields as (

        select
            m.*,
            from_json(m.msg.`schema`, '{{ schema_struct }}') as sch,
            from_json(m.msg.payload, '{{ payload_struct }}') as pl
        from dw_messages as m

    ),

    dw_images as (

        select
            f.*,
            {#- a null-value Kafka record (log compaction) changes nothing #}
            case when f.value is null then '<tombstone>' else {{ u('f.pl.op') }} end as op,
            {{ u('f.pl.sequenceId') }} as sequence_id,
            {{ u('f.sch.source.dbName') }} as source_database,
            {{ u('f.sch.source.schemaName') }} as source_schema,
            {{ u('f.sch.source.tableName') }} as source_table,
            from_json(f.pl.before, 'struct<dataColumn: string>').dataColumn as own_before_json,
            from_json(f.pl.after, 'struct<dataColumn: string>').dataColumn as after_json,
            {{ u('f.pl.ddl.text') }} as ddl_text
        from dw_fields as f

    ),

    dw_rows as (

        select
            i.*,
            {#- the key: primaryKey, else the hidden row-id columns (Oracle's rowid only from Oracle) #}
            coalesce(array_distinct(case
                when size(i.sch.primaryKey) > 0 then filter(i.sch.primaryKey, k -> k is not null)
                else filter(
                    coalesce(
                        transform(i.sch.dataColumn, c -> c.name),
                        map_keys({{ cdc_image_map('coalesce(i.after_json, i.own_before_json)') }})
                    ),
                    n -> n in ('{{ _dataworks_hidden_key_columns() | join("', '") }}')
                        or (lower(n) = 'rowid' and lower(i.sch.source.dbType) like '%oracle%')
                )
            end), array()) as key_columns
        from dw_images as i

    ),

    dw_keyed as (

        select
            k.*,
            filter(k.key_columns, c -> not coalesce(map_contains_key({{ cdc_image_map(
                "case when k.op in ('INSERT', 'UPDATE_AFTER') then k.after_json else k.own_before_json end"
            ) }}, c), true)) as missing_key_columns
        from dw_rows as k

    ),

    {#-
        The UPDATE_BEFOR halves known so far, one per (topic, table, sequenceId): this run's and,
        on incremental runs, the ones earlier runs kept as control events with their before image.
    #}
    befor_halves as (

        select
            {{ pair_key | join(', ') }},
            max_by(before_json, found_at) as before_json
        from (
            select
                {{ pair_key | join(', ') }},
                own_before_json as before_json,
                offset as found_at
            from dw_keyed
            where op = 'UPDATE_BEFOR' and own_before_json is not null and sequence_id is not null
            {%- if is_incremental() %}

            union all

            {#- silver keeps images as exact JSON text: mark it again to parse it like a message #}
            select
                kafka_topic as topic,
                source_database,
                source_schema,
                source_table,
                vendor_sequence as sequence_id,
                {{ cdc_mark_json('before_image') }} as before_json,
                -1 as found_at
            from {{ this }}
            where
                source_format in ({{ formats }})
                and record_kind = 'control'
                and vendor_op = 'UPDATE_BEFOR'
                and before_image is not null
            {%- endif %}
        ) as halves
        group by {{ pair_key | join(', ') }}

    ),

    {#- UPDATE_AFTER halves: this run's, and the ones earlier runs applied without a before image #}
    after_halves as (

        select {{ pair_key | join(', ') }}, max(applied_earlier) as applied_earlier
        from (
            select {{ pair_key | join(', ') }}, false as applied_earlier
            from dw_keyed
            where op = 'UPDATE_AFTER' and sequence_id is not null
            {%- if is_incremental() %}

            union all

            select
                kafka_topic as topic,
                source_database,
                source_schema,
                source_table,
                vendor_sequence as sequence_id,
                true as applied_earlier
            from {{ this }}
            where
                source_format in ({{ formats }})
                and record_kind = 'change'
                and vendor_op = 'UPDATE_AFTER'
                and before_image is null
            {%- endif %}
        ) as halves
        group by {{ pair_key | join(', ') }}
        {#- a half applied earlier only matters when this run holds no UPDATE_AFTER of that update #}
        having min(applied_earlier) = true

    ),

    paired as (

        select
            r.*,
            case
                when r.op = 'UPDATE_AFTER' then coalesce(r.own_before_json, b.before_json)
                else r.own_before_json
            end as before_json,
            case
                when r.op = 'UPDATE_BEFOR' and a.applied_earlier then '<late UPDATE_BEFOR>'
                else r.op
            end as paired_op
        from dw_keyed as r
        left join befor_halves as b
            on
                r.op = 'UPDATE_AFTER'
                {%- for k in pair_key %}
                and r.{{ k }} <=> b.{{ k }}
                {%- endfor %}
        left join after_halves as a
            on
                r.op = 'UPDATE_BEFOR'
                {%- for k in pair_key %}
                and r.{{ k }} <=> a.{{ k }}
                {%- endfor %}

    ),

    judged as (

        select
            p.*,
            case when p.sequence_id = '-1' then '0' else '1' end as phase,
            case
                when cast({{ u('p.pl.`timestamp`.eventTime') }} as decimal(38, 0)) > 0
                    then {{ cdc_epoch_to_timestamp(u('p.pl.`timestamp`.eventTime')) }}
                else {{ cdc_epoch_to_timestamp(u('p.pl.`timestamp`.systemTime')) }}
            end as event_time,
            case when p.sch.dataColumn is not null then {{ _dataworks_column_types('p.sch.dataColumn') }}
            end as column_types,
            case
                when p.value is null then null
                when p.msg.`_corrupt` is not null or p.msg is null then 'invalid JSON'
                when p.pl is null then 'shape does not match ' || p.resolved_format || ': no payload'
                when p.op is null then 'shape does not match ' || p.resolved_format || ': no payload.op'
                when p.op in ('INSERT', 'UPDATE_AFTER') and p.after_json is null
                    then 'shape does not match ' || p.resolved_format || ': ' || p.op
                        || ' without payload.after.dataColumn'
                when p.op in ('DELETE', 'UPDATE_BEFOR') and p.own_before_json is null
                    then 'shape does not match ' || p.resolved_format || ': ' || p.op
                        || ' without payload.before.dataColumn'
                {#- a key the row does not hold would collapse every row of the table into one #}
                when size(p.missing_key_columns) > 0 and p.op in ('INSERT', 'UPDATE_AFTER', 'DELETE', 'UPDATE_BEFOR')
                    then 'no key: key column(s) ' || array_join(p.missing_key_columns, ', ')
                        || ' named by the message are absent from the row image'
            end as parse_error
        from paired as p

    ),

    {#-
        One row per record; a key-less update (multiset) also emits `<before image>`, the delete
        of its old row, ordered just before it (half 0). The before half of an update sorts
        before the after half that shares its sequenceId.
    #}
    expanded as (

        select
            j.*,
            x.vendor_op,
            x.half,
            x.row_index,
            case when x.vendor_op <> '<before image>' then j.after_json end as row_after_json
        from (
            select
                *,
                parse_error is null and paired_op = 'UPDATE_AFTER' and size(key_columns) = 0
                    and before_json is not null as keyless_update
            from judged
        ) as j
        lateral view inline(case
            when j.keyless_update then array(
                named_struct('vendor_op', '<before image>', 'half', '0', 'row_index', 0),
                named_struct('vendor_op', j.paired_op, 'half', '1', 'row_index', 1)
            )
            else array(named_struct(
                'vendor_op', j.paired_op,
                'half', case when j.paired_op in ('UPDATE_BEFOR', '<late UPDATE_BEFOR>') then '0' else '1' end,
                'row_index', 0
            ))
        end) x

    )

    select
        {{ cdc_parser_select(exprs) }}
    from expanded as e
{%- endmacro %}
