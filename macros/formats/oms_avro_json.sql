{#
    oms-avro-json: the Avro serialization of OceanBase OMS, as JSON (shared/formats/oceanbase-oms.txt).

    - {"version", "id", "sourceTimestamp", "sourcePosition", "safeSourcePosition", "sourceTxid",
      "source", "operation", "objectName", "processTimestamps", "tags", "fields", "beforeImages",
      "afterImages"}; operation INIT (full load) / INSERT / UPDATE / DELETE / DDL (op seed);
    - `fields` names the columns ({"name", "dataTypeNumber"}: the MySQL column type number);
      beforeImages / afterImages are positional: entry i is the value of field i, an entry is
      null (SQL NULL) or an object: {"value", "precision"} (integer), {"value", "precision",
      "scale"} (decimal, float), {"charset", "value": {"bytes": ".."}} (text), {"type", "value"}
      (binary, JSON, enum, set, geometry), or an object without `value` (Avro timestamp /
      datetime records), kept whole as JSON text;
    - values are kept as sent: strings stay strings (DECIMAL text plain or scientific, exact);
      {"bytes": s} is Avro's JSON form of bytes (one character per byte): with a charset it is
      decoded (utf8*, utf16*, utf32, latin1/ascii as is), without one (binary) written in base64
      like the other OMS formats; a string with characters above U+00FF was not byte-encoded
      and is kept as is;
    - the key: tags.pk_uk_info, a JSON text {"PRIMARY": ["id"]} (else the first unique key);
    - objectName is {database}.{table} (a DDL may name the database only);
    - DDL: afterImages is a string, the statement; fields and beforeImages are null;
    - order: INIT rows first (phase 0); then sourcePosition (the checkpoint, seconds) and `id`
      ({milliseconds}{five-digit increment}); then Kafka partition / offset. Not sourceTimestamp;
    - column_types: {"col": {"type": "<MySQL type name>", "dataTypeNumber", "precision", "scale", "charset"}}.
#}

{% macro _oms_avro_mysql_type(number) -%}
    {#- MySQL's column type numbers (enum_field_types), as sent in dataTypeNumber -#}
    {%- set names = {
        0: 'DECIMAL', 1: 'TINY', 2: 'SHORT', 3: 'LONG', 4: 'FLOAT', 5: 'DOUBLE', 6: 'NULL',
        7: 'TIMESTAMP', 8: 'LONGLONG', 9: 'INT24', 10: 'DATE', 11: 'TIME', 12: 'DATETIME',
        13: 'YEAR', 14: 'NEWDATE', 15: 'VARCHAR', 16: 'BIT', 17: 'TIMESTAMP2', 18: 'DATETIME2',
        19: 'TIME2', 245: 'JSON', 246: 'NEWDECIMAL', 247: 'ENUM', 248: 'SET', 249: 'TINY_BLOB',
        250: 'MEDIUM_BLOB', 251: 'LONG_BLOB', 252: 'BLOB', 253: 'VAR_STRING', 254: 'STRING',
        255: 'GEOMETRY',
    } -%}
    case {{ number }}
        {%- for n, name in names.items() %}
        when '{{ n }}' then '{{ name }}'
        {%- endfor %}
        else {{ number }}
    end
{%- endmacro %}

{% macro _oms_avro_value(entry) -%}
    {#- One marked image entry (JSON text of the Avro union) -> a marked value for the image map -#}
    case
        when {{ entry }} is null then null
        when from_json({{ entry }}, 'struct<value: struct<bytes: string>>').value is not null then
            {{ _oms_avro_bytes(
                "from_json(" ~ entry ~ ", 'struct<value: struct<bytes: string>>').value.bytes",
                "lower(from_json(" ~ entry ~ ", 'struct<charset: string>').charset)"
            ) }}
        when from_json({{ entry }}, 'map<string, string>') is not null
            and not map_contains_key(from_json({{ entry }}, 'map<string, string>'), 'value')
            {#- an Avro record without `value` (timestamp, datetime): its JSON text #}
            then {{ cdc_unmark_json(entry) }}
        else from_json({{ entry }}, 'struct<value: string>').value
    end
{%- endmacro %}

{% macro _oms_avro_bytes(chars, charset) -%}
    {#- Avro JSON bytes (one character per byte, U+0000..U+00FF) -> text in its charset, or base64 -#}
    case
        when {{ chars }} is null then null
        {#- characters above U+00FF: not byte-encoded; encode() would fail the query on them #}
        when not {{ chars }} rlike '^[\\x{0}-\\x{ff}]*+$' then {{ chars }}
        when {{ charset }} is null or {{ charset }} = 'binary' then base64(encode({{ chars }}, 'ISO-8859-1'))
        when {{ charset }} in ('latin1', 'ascii', 'iso-8859-1', 'us-ascii') then {{ chars }}
        when {{ charset }} in ('utf16', 'utf-16', 'ucs2') then decode(encode({{ chars }}, 'ISO-8859-1'), 'UTF-16BE')
        when {{ charset }} in ('utf16le', 'utf-16le') then decode(encode({{ chars }}, 'ISO-8859-1'), 'UTF-16LE')
        when {{ charset }} in ('utf32', 'utf-32') then decode(encode({{ chars }}, 'ISO-8859-1'), 'UTF-32')
        when is_valid_utf8(encode({{ chars }}, 'ISO-8859-1')) then decode(encode({{ chars }}, 'ISO-8859-1'), 'UTF-8')
        else {{ chars }}
    end
{%- endmacro %}

{% macro _oms_avro_entry_field(alias, index, name) -%}
    {#- A metadata field (precision, scale, charset) of column `index`, after image first -#}
    coalesce(
        from_json(element_at({{ alias }}.after_entries, {{ index }} + 1), 'struct<{{ name }}: string>').{{ name }},
        from_json(element_at({{ alias }}.before_entries, {{ index }} + 1), 'struct<{{ name }}: string>').{{ name }}
    )
{%- endmacro %}

{% macro parse_oms_avro_json(records, format_ids) -%}
    {%- set envelope_schema -%}
        struct<version: string, id: string, sourceTimestamp: string, sourcePosition: string,
        safeSourcePosition: string, sourceTxid: string, source: string, operation: string,
        objectName: string, processTimestamps: string, tags: string, fields: string,
        beforeImages: string, afterImages: string, `_corrupt`: string>
    {%- endset -%}
    {%- set u = cdc_unmark_value -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': '0',
            'vendor_op': 'e.vendor_op',
            'source_database': 'e.source_database',
            'source_table': 'e.source_table',
            'key_columns': 'e.key_columns',
            'before_values': 'e.before_map',
            'after_values': 'e.after_map',
            'before_image': cdc_map_to_json('e.before_map'),
            'after_image': cdc_map_to_json('e.after_map'),
            'column_types': 'e.column_types',
            'event_time': cdc_epoch_to_timestamp('e.source_timestamp'),
            'vendor_sequence': "concat_ws('/', e.source_position, e.id)",
            'apply_order': cdc_apply_order("case when e.vendor_op = 'INIT' then '0' else '1' end",
                ['e.seq1', 'e.seq2'], 'e.partition', 'e.offset', '0'),
            'transaction_id': 'e.transaction_id',
            'statement': 'e.statement',
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            p.*,
            case when p.parse_error is null and p.before_entries is not null
                then map_from_arrays(p.names, transform(p.before_entries, x -> {{ _oms_avro_value('x') }}))
            end as before_map,
            case when p.parse_error is null and p.after_entries is not null
                then map_from_arrays(p.names, transform(p.after_entries, x -> {{ _oms_avro_value('x') }}))
            end as after_map,
            case when p.parse_error is null and p.names is not null then {{ cdc_unmark_json("to_json(map_from_arrays(
                p.names,
                transform(p.field_list, (f, i) -> map_filter(map(
                    'type', " ~ _oms_avro_mysql_type(u('f.dataTypeNumber')) ~ ",
                    'dataTypeNumber', f.dataTypeNumber,
                    'precision', " ~ _oms_avro_entry_field('p', 'i', 'precision') ~ ",
                    'scale', " ~ _oms_avro_entry_field('p', 'i', 'scale') ~ ",
                    'charset', " ~ _oms_avro_entry_field('p', 'i', 'charset') ~ "
                ), (k, v) -> v is not null))
            ))") }} end as column_types,
            case when p.vendor_op <> 'INIT' then p.source_position end as seq1,
            case when p.vendor_op <> 'INIT' then p.id end as seq2
        from (
            select
                m.*,
                case
                    when m.value is null then 'shape does not match ' || m.resolved_format || ': the record has no value'
                    when m.msg is null or m.msg.`_corrupt` is not null then 'invalid JSON'
                    when m.vendor_op is null then 'shape does not match ' || m.resolved_format || ': no operation'
                    when m.vendor_op = 'DDL' and m.statement is null
                        then 'shape does not match ' || m.resolved_format || ': DDL without the statement in afterImages'
                    when m.vendor_op = 'DDL' then null
                    when m.field_list is null then 'shape does not match ' || m.resolved_format || ': no fields'
                    when exists(m.names, n -> n is null) then 'shape does not match ' || m.resolved_format || ': a field without name'
                    when size(array_distinct(m.names)) < size(m.names)
                        then 'shape does not match ' || m.resolved_format || ': a field name repeats'
                    when m.vendor_op in ('INIT', 'INSERT', 'UPDATE') and m.after_entries is null
                        then 'shape does not match ' || m.resolved_format || ': ' || m.vendor_op || ' without afterImages'
                    when m.vendor_op = 'DELETE' and m.before_entries is null
                        then 'shape does not match ' || m.resolved_format || ': DELETE without beforeImages'
                    when m.after_entries is not null and size(m.after_entries) <> size(m.names)
                        then 'shape does not match ' || m.resolved_format || ': ' || size(m.names)
                            || ' fields but ' || size(m.after_entries) || ' afterImages'
                    when m.before_entries is not null and size(m.before_entries) <> size(m.names)
                        then 'shape does not match ' || m.resolved_format || ': ' || size(m.names)
                            || ' fields but ' || size(m.before_entries) || ' beforeImages'
                end as parse_error
            from (
                select
                    r.*,
                    {{ u('r.msg.operation') }} as vendor_op,
                    from_json(r.msg.fields, 'array<struct<name: string, dataTypeNumber: string>>') as field_list,
                    transform(
                        from_json(r.msg.fields, 'array<struct<name: string, dataTypeNumber: string>>'),
                        f -> f.name
                    ) as names,
                    from_json(r.msg.beforeImages, 'array<string>') as before_entries,
                    from_json(r.msg.afterImages, 'array<string>') as after_entries,
                    {#- a DDL's afterImages is a JSON string: the statement #}
                    case when {{ u('r.msg.operation') }} = 'DDL' and from_json(r.msg.afterImages, 'array<string>') is null
                        then r.msg.afterImages end as statement,
                    case
                        when {{ u('r.msg.objectName') }} like '%.%'
                            then substr({{ u('r.msg.objectName') }}, 1, instr({{ u('r.msg.objectName') }}, '.') - 1)
                        when {{ u('r.msg.operation') }} = 'DDL' then {{ u('r.msg.objectName') }}
                    end as source_database,
                    case
                        when {{ u('r.msg.objectName') }} like '%.%'
                            then substr({{ u('r.msg.objectName') }}, instr({{ u('r.msg.objectName') }}, '.') + 1)
                        when {{ u('r.msg.operation') }} <> 'DDL' then {{ u('r.msg.objectName') }}
                    end as source_table,
                    {#- pk_uk_info is JSON inside a string: {"PRIMARY": [..]} or unique keys #}
                    coalesce(
                        element_at(from_json(r.pk_uk_info, 'map<string, array<string>>'), 'PRIMARY'),
                        element_at(map_values(from_json(r.pk_uk_info, 'map<string, array<string>>')), 1),
                        cast(array() as array<string>)
                    ) as key_columns,
                    {{ u('r.msg.sourceTimestamp') }} as source_timestamp,
                    {{ u('r.msg.sourcePosition') }} as source_position,
                    {{ u('r.msg.id') }} as id,
                    nullif({{ u('r.msg.sourceTxid') }}, '') as transaction_id
                from (
                    select
                        b.*,
                        element_at(from_json(b.msg.tags, 'map<string, string>'), 'pk_uk_info') as pk_uk_info
                    from (
                        select
                            rec.*,
                            from_json({{ cdc_mark_json('rec.value_text') }}, '{{ envelope_schema }}',
                                map('columnNameOfCorruptRecord', '_corrupt')) as msg
                        from {{ records }} as rec
                        where rec.resolved_format in ('{{ format_ids | join("', '") }}')
                    ) as b
                ) as r
            ) as m
        ) as p
    ) as e
{%- endmacro %}
