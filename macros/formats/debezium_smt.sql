{#
    debezium-smt: Debezium events flattened by the ExtractNewRecordState SMT, as OceanBase OMS
    writes them with its DebeziumSmt serialization (shared/formats/oceanbase-oms.txt).

    - the value is the row's fields only, plus "__deleted": "false" (insert, update: the after
      image) or "true" (delete: the row as it was); with the JSON converter's schemas the value
      is {"schema": .., "payload": {..}} and the schema gives column_types;
    - fields the SMT may add (add.fields): __op (c / u / d / r, used as the op when present),
      __table, __db (name the table), __source_ts_ms / __ts_ms (event time), other __source_*,
      __lsn: metadata, never columns of the row;
    - the table comes from the topic, Debezium's <server>.<database>.<table> (<database>.<table>
      and <table> are accepted too) unless __table / __db name it;
    - the key comes from the Kafka record key, a JSON object with or without schema / payload,
      as Debezium writes it; without a key the whole row is its identity;
    - a null-value record (tombstone) with a key deletes that key, and so does the JSON
      converter's form of it, {"schema": .., "payload": null}: with
      delete.handling.mode=drop it is the only trace of a delete (after a __deleted "true"
      record it deletes again, which changes nothing); a tombstone without a key is a control
      event;
    - order: the format carries no source position, so Kafka partition / offset (full-load rows,
      __op r, first).
#}

{% macro _debezium_smt_metadata_pattern() -%}
    {#- the SMT's own fields (add.fields / delete.handling.mode=rewrite), not row columns -#}
    {{ return("'^__(deleted|op|table|db|ts_ms|lsn|source_.+)$'") }}
{%- endmacro %}

{% macro parse_debezium_smt(records, format_ids) -%}
    {%- set u = cdc_unmark_value -%}
    {#- a delete as the SMT's tombstone: a null value, or, from the JSON converter with schemas,
        its envelope around a null payload -#}
    {%- set tombstone -%}
        (m.value is null or (m.msg.`schema` is not null and m.msg.payload is null
            and array_sort(map_keys({{ cdc_image_map('m.marked') }})) = array('payload', 'schema')))
    {%- endset -%}
    {#- the row's JSON: the JSON converter with schemas wraps it, {"schema": .., "payload": {..}} -#}
    {%- set fields_json -%}
        case
            when {{ tombstone }} then null
            when m.msg.`schema` is not null and {{ cdc_image_map('m.msg.payload') }} is not null then m.msg.payload
            else m.marked
        end
    {%- endset -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': '0',
            'vendor_op': 'e.vendor_op',
            'source_database': "coalesce(e.meta_db, case when size(e.topic_parts) >= 3 then e.topic_parts[1] when size(e.topic_parts) = 2 then e.topic_parts[0] end)",
            'source_table': "coalesce(e.meta_table, case when size(e.topic_parts) >= 3 then array_join(slice(e.topic_parts, 3, size(e.topic_parts) - 2), '.') else element_at(e.topic_parts, -1) end)",
            'key_columns': "coalesce(map_keys(e.key_values), cast(array() as array<string>))",
            'key_values': 'e.key_values',
            'before_values': "case when e.is_delete then e.row_map end",
            'after_values': "case when not e.is_delete then e.row_map end",
            'before_image': "case when e.is_delete then " ~ cdc_unmark_json('e.row_json') ~ " end",
            'after_image': "case when not e.is_delete then " ~ cdc_unmark_json('e.row_json') ~ " end",
            'column_types': 'e.column_types',
            'event_time': "coalesce(" ~ cdc_epoch_to_timestamp('e.source_ts') ~ ", e.timestamp)",
            'apply_order': cdc_apply_order("case when e.vendor_op = 'r' then '0' else '1' end", [], 'e.partition', 'e.offset', '0'),
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            p.*,
            case
                when p.is_tombstone then
                    case when size(map_keys(p.key_values)) > 0 then '<tombstone>' else '<tombstone-without-key>' end
                when p.parse_error is not null then null
                when p.fields is null then null
                else coalesce({{ u("p.fields['__op']") }}, {{ u("p.fields['__deleted']") }}, '<row>')
            end as vendor_op,
            {#- without __op and __deleted (the SMT's defaults) the row is an upsert, not unknown #}
            p.is_tombstone
                or coalesce({{ u("p.fields['__op']") }}, {{ u("p.fields['__deleted']") }}, '') in ('d', 'true') as is_delete,
            map_filter(p.fields, (k, v) -> not k rlike {{ _debezium_smt_metadata_pattern() }}) as row_map,
            {#- the image as JSON through a variant map, so that a struct value (a
                VariableScaleDecimal, a geometry) or an array stays JSON and is not quoted #}
            to_json(map_filter(from_json(p.fields_json, 'map<string, variant>'),
                (k, v) -> not k rlike {{ _debezium_smt_metadata_pattern() }})) as row_json,
            {{ u("p.fields['__table']") }} as meta_table,
            {{ u("coalesce(p.fields['__db'], p.fields['__source_db'])") }} as meta_db,
            {{ u("coalesce(p.fields['__source_ts_ms'], p.fields['__ts_ms'])") }} as source_ts
        from (
            select
                m.*,
                case
                    when {{ tombstone }} then null
                    when m.msg is null then 'invalid JSON'
                    when m.msg.`_corrupt` is not null then
                        case
                            when from_json(m.marked, 'array<string>') is not null
                                or trim(m.value_text) rlike '^("([^"\\\\]|\\\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null)$'
                                then 'shape does not match ' || m.resolved_format || ': the value is not a JSON object'
                            else 'invalid JSON'
                        end
                end as parse_error,
                {{ cdc_image_map(fields_json) }} as fields,
                {{ fields_json }} as fields_json,
                case when m.msg.`schema` is not null and {{ cdc_image_map('m.msg.payload') }} is not null then
                    {{ cdc_unmark_json("to_json(map_from_entries(transform(
                        from_json(m.msg.`schema`, 'struct<fields: array<struct<field: string, type: string, name: string, parameters: map<string, string>, items: struct<type: string, name: string, parameters: map<string, string>>>>>').fields,
                        c -> struct(c.field, struct(c.type as type, c.name as name, c.parameters as parameters, c.items as items))
                    )))") }}
                end as column_types,
                {{ tombstone }} as is_tombstone
            from (
                select
                    r.*,
                    from_json(r.marked, 'struct<`schema`: string, payload: string, `_corrupt`: string>',
                        map('columnNameOfCorruptRecord', '_corrupt')) as msg,
                    {{ cdc_image_map(
                        "case when r.key_msg.payload is not null then r.key_msg.payload"
                        ~ " when r.key_msg.`_corrupt` is null then r.key_marked end"
                    ) }} as key_values
                from (
                    select
                        b.*,
                        from_json(b.key_marked, 'struct<`schema`: string, payload: string, `_corrupt`: string>',
                            map('columnNameOfCorruptRecord', '_corrupt')) as key_msg
                    from (
                        select
                            rec.*,
                            {{ cdc_mark_json('rec.value_text') }} as marked,
                            {{ cdc_mark_json('rec.key_text') }} as key_marked,
                            split(rec.topic, '[.]') as topic_parts
                        from {{ records }} as rec
                        where rec.resolved_format in ('{{ format_ids | join("', '") }}')
                    ) as b
                ) as r
            ) as m
        ) as p
    ) as e
{%- endmacro %}
