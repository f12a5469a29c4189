{#
    debezium-json (and debezium-flat): Debezium change events as written by Debezium itself,
    dtle (shared/formats/dtle-debezium.txt), CloudCanal and OceanBase OMS.

    - the envelope comes with `schema` + `payload`, with `payload` only, or flat (the payload's
      fields at the top: debezium-flat / DebeziumFlatten);
    - op c / u / d / r, `i` (CloudCanal) as insert, `t` truncate, `a` / a `ddl` field (DDL),
      HEARTBEAT (OMS), transaction metadata (`status` BEGIN / END) - all mapped by the op seed;
    - the key comes from the Kafka record key (`{"schema":..,"payload":{..}}` or a bare object);
    - a Kafka record with a null value is the tombstone that follows a delete: a control event;
    - order: the source position (MySQL binlog file number / pos / row, OMS `pos` as
      <offset>@<seconds>, PostgreSQL lsn, Oracle scn, SQL Server change_lsn), never ts_ms.
#}

{% macro _debezium_payload_fields() -%}
    {{ return(['before', 'after', 'source', 'op', 'ts_ms', 'transaction', 'ddl',
               'databaseName', 'position', 'tableChanges', 'status', 'id']) }}
{%- endmacro %}

{% macro parse_debezium_json(records, format_ids) -%}
    {%- set fields = _debezium_payload_fields() -%}
    {%- set payload_schema -%}
        struct<{% for f in fields %}`{{ f }}`: string{{ ", " if not loop.last }}{% endfor %}>
    {%- endset -%}
    {%- set envelope_schema -%}
        struct<`schema`: string, `payload`: string, {% for f in fields %}`{{ f }}`: string, {% endfor %}`_corrupt`: string>
    {%- endset -%}
    {%- set source_schema -%}
        struct<db: string, `schema`: string, `table`: string, file: string, pos: string, `row`: string,
        lsn: string, scn: string, change_lsn: string, ts_ms: string, gtid: string, txId: string>
    {%- endset -%}
    {%- set u = cdc_unmark_value -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': '0',
            'vendor_op': 'e.vendor_op',
            'source_database': "coalesce(" ~ u('e.src.db') ~ ", e.databasename, e.topic_parts[1])",
            'source_schema': u('e.src.`schema`'),
            'source_table': "coalesce(" ~ u('e.src.`table`') ~ ", e.topic_parts[2])",
            'key_columns': 'map_keys(e.key_values)',
            'key_values': 'e.key_values',
            'before_values': cdc_image_map('e.before_json'),
            'after_values': cdc_image_map('e.after_json'),
            'before_image': cdc_unmark_json('e.before_json'),
            'after_image': cdc_unmark_json('e.after_json'),
            'column_types': 'e.column_types',
            'event_time': cdc_epoch_to_timestamp("coalesce(nullif(" ~ u('e.src.ts_ms') ~ ", '0'), " ~ u('e.ts_ms') ~ ")"),
            'vendor_sequence': 'e.vendor_sequence',
            'apply_order': cdc_apply_order('1', ['e.seq1', 'e.seq2', 'e.seq3'], 'e.partition', 'e.offset', '0'),
            'transaction_id': "coalesce(get_json_object(e.transaction_json, '$.id'), " ~ u('e.src.gtid') ~ ", " ~ u('e.src.txId') ~ ", case when e.vendor_op in ('BEGIN', 'END') then " ~ u('e.id') ~ " end)",
            'statement': 'e.ddl',
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            p.*,
            case
                when p.src_pos like '%@%' then split_part(p.src_pos, '@', 2)
                when p.src_file <> '' then regexp_extract(p.src_file, '([0-9]+)$', 1)
                when p.src.lsn is not null then {{ u('p.src.lsn') }}
                when p.src.scn is not null then {{ u('p.src.scn') }}
                when p.src.change_lsn is not null then conv(split_part(p.src.change_lsn, ':', 1), 16, 10)
                else p.src_pos
            end as seq1,
            case
                when p.src_pos like '%@%' then split_part(p.src_pos, '@', 1)
                when p.src_file <> '' then p.src_pos
                when p.src.change_lsn is not null then conv(split_part(p.src.change_lsn, ':', 2), 16, 10)
            end as seq2,
            case
                when p.src_file <> '' then {{ u('p.src.`row`') }}
                when p.src.change_lsn is not null then conv(split_part(p.src.change_lsn, ':', 3), 16, 10)
            end as seq3,
            nullif(concat_ws(':',
                nullif(p.src_file, ''), p.src_pos, {{ u('p.src.`row`') }},
                {{ u('p.src.lsn') }}, {{ u('p.src.scn') }}, p.src.change_lsn
            ), '') as vendor_sequence
        from (
            {#- the source is parsed once, here: its file and pos come from that struct #}
            select
                s.*,
                coalesce({{ u('s.src.file') }}, {{ u("get_json_object(s.position_json, '$.file')") }}) as src_file,
                coalesce({{ u('s.src.pos') }}, {{ u("get_json_object(s.position_json, '$.pos')") }}) as src_pos
            from (
            select
                m.*,
                from_json(m.source_json, '{{ source_schema }}') as src
            from (
                select
                    r.*,
                    split(r.topic, '[.]') as topic_parts,
                    {%- for f in fields %}
                    case when r.msg.payload is not null then r.pl.`{{ f }}` else r.msg.`{{ f }}` end as {{ f | lower }}{% if f in ['before', 'after', 'source', 'transaction', 'position'] %}_json{% endif %},
                    {%- endfor %}
                    case
                        when r.value is null then '<tombstone>'
                        when r.msg.`_corrupt` is not null or r.msg is null then null
                        when coalesce(r.pl.op, r.msg.op) is not null then coalesce(r.pl.op, r.msg.op)
                        when coalesce(r.pl.ddl, r.msg.ddl) is not null then '<ddl>'
                        when {{ u('coalesce(r.pl.status, r.msg.status)') }} in ('BEGIN', 'END')
                            then {{ u('coalesce(r.pl.status, r.msg.status)') }}
                    end as vendor_op,
                    case
                        when r.value is null then null
                        when r.msg.`_corrupt` is not null or r.msg is null then 'invalid JSON'
                        when r.msg.payload is null and r.msg.op is null and r.msg.ddl is null
                            and r.msg.status is null and r.msg.`schema` is not null
                            then 'shape does not match ' || r.resolved_format || ': payload is null'
                        when coalesce(r.pl.op, r.msg.op, r.pl.ddl, r.msg.ddl, r.pl.status, r.msg.status) is null
                            then 'shape does not match ' || r.resolved_format || ': no op, ddl or transaction status'
                    end as parse_error,
                    {{ cdc_image_map(
                        "case when r.key_msg.payload is not null then r.key_msg.payload"
                        ~ " when r.key_msg.`_corrupt` is null then r.key_marked end"
                    ) }} as key_values,
                    {#- a column named twice or not named at all has no type: a map of
                        them would fail the whole run (DUPLICATED_MAP_KEY, null map key); an
                        array column keeps its element type (`items`) #}
                    {%- set after_fields -%}
                        filter(
                            from_json(r.msg.`schema`, 'struct<fields: array<struct<field: string, fields: array<struct<field: string, type: string, name: string, parameters: map<string, string>, items: struct<type: string, name: string, parameters: map<string, string>>>>>>>').fields,
                            f -> f.field = 'after'
                        )[0].fields
                    {%- endset %}
                    case
                        when r.msg.`schema` is not null
                            and size(array_distinct(transform({{ after_fields }}, c -> c.field))) = size({{ after_fields }})
                            and not exists({{ after_fields }}, c -> c.field is null)
                            then {{ cdc_unmark_json("to_json(map_from_entries(transform(" ~ after_fields ~ ",
                        c -> struct(c.field, struct(c.type as type, c.name as name, c.parameters as parameters, c.items as items))
                    )))") }} end as column_types
                from (
                    select
                        b.*,
                        from_json(b.msg.payload, '{{ payload_schema }}') as pl,
                        from_json(b.key_marked, 'struct<`schema`: string, payload: string, `_corrupt`: string>',
                            map('columnNameOfCorruptRecord', '_corrupt')) as key_msg
                    from (
                        select
                            rec.*,
                            from_json({{ cdc_mark_json('rec.value_text') }}, '{{ envelope_schema }}',
                                map('columnNameOfCorruptRecord', '_corrupt')) as msg,
                            {{ cdc_mark_json('rec.key_text') }} as key_marked
                        from {{ records }} as rec
                        where rec.resolved_format in ('{{ format_ids | join("', '") }}')
                    ) as b
                ) as r
            ) as m
            ) as s
        ) as p
    ) as e
{%- endmacro %}
