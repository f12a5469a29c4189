{#
    ogg-json: Oracle GoldenGate (for Big Data / Distributed Applications) JSON formatter, one
    operation per Kafka record.

    - message: table ("SCHEMA.TABLE", or "CATALOG.SCHEMA.TABLE" for a pluggable database), op_type,
      op_ts ("YYYY-MM-DD HH:MM:SS.ffffff", UTC), current_ts, pos (trail sequence number + RBA, a
      20-digit number), optional primary_keys, tokens, xid, csn, txind, before, after;
    - op_type I / U / D and T (truncate) mapped by the op seed; a null-value Kafka record is a
      tombstone control event;
    - compressed updates: `after` may hold only the key and the changed columns; when `before`
      is there, the after image is completed from it (SPEC rule 3);
    - key: primary_keys (names matched case-insensitively against the image when the exact name
      is absent: GoldenGate upper-cases Oracle names, catalogs may not); without primary_keys
      (the formatter's default) the table is a multiset and an update also emits
      `<before image>`, the delete of its old row;
    - order: pos, then Kafka partition / offset.
#}

{% macro parse_ogg_json(records, format_ids) -%}
    {%- set u = cdc_unmark_value -%}
    {%- set envelope_schema -%}
        struct<`table`: string, op_type: string, op_ts: string, current_ts: string, pos: string,
        primary_keys: array<string>, tokens: string, before: string, after: string, xid: string,
        csn: string, txind: string, `_corrupt`: string>
    {%- endset -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': 'x.row_index',
            'vendor_op': 'x.vendor_op',
            'source_database': "case when size(e.name_parts) >= 3 then e.name_parts[size(e.name_parts) - 3] end",
            'source_schema': "case when size(e.name_parts) >= 2 then e.name_parts[size(e.name_parts) - 2] end",
            'source_table': 'e.name_parts[size(e.name_parts) - 1]',
            'key_columns': 'e.key_columns',
            'key_values': 'e.key_values',
            'before_values': 'e.before_map',
            'after_values': "case when x.vendor_op <> '<before image>' then e.after_map end",
            'before_image': cdc_map_to_json('e.before_map'),
            'after_image': cdc_map_to_json("case when x.vendor_op <> '<before image>' then e.after_map end"),
            'event_time': 'cast(' ~ u('e.msg.op_ts') ~ ' as timestamp)',
            'vendor_sequence': u('e.msg.pos'),
            'apply_order': cdc_apply_order('1', [u('e.msg.pos')], 'e.partition', 'e.offset', 'x.row_index'),
            'transaction_id': u('e.msg.xid'),
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            c.*,
            {#- key values: the exact column, else the one whose name matches case-insensitively #}
            map_from_arrays(c.key_columns, transform(c.key_columns, k -> coalesce(
                element_at(c.key_image, k),
                map_values(map_filter(c.key_image, (n, v) -> lower(n) = lower(k)))[0]
            ))) as key_values,
            case
                when c.value is null then null
                when c.msg.`_corrupt` is not null or c.msg is null then 'invalid JSON'
                when c.msg.op_type is null then 'shape does not match ' || c.resolved_format || ': no op_type'
                when c.msg.`table` is null then 'shape does not match ' || c.resolved_format || ': no table'
                when c.op_type in ('I', 'U') and c.after_map is null
                    then 'shape does not match ' || c.resolved_format || ': op_type ' || c.op_type || ' without after'
                when c.op_type = 'D' and c.before_map is null
                    then 'shape does not match ' || c.resolved_format || ': op_type D without before'
            end as parse_error
        from (
            select
                i.*,
                case when i.op_type = 'D' then i.before_map else i.after_map end as key_image
            from (
                select
                    r.*,
                    {#- a null-value Kafka record (log compaction) changes nothing #}
                    case when r.value is null then '<tombstone>' else {{ u('r.msg.op_type') }} end as op_type,
                    split({{ u('r.msg.`table`') }}, '[.]') as name_parts,
                    coalesce(array_distinct(filter(r.msg.primary_keys, k -> k is not null)), array()) as key_columns,
                    {{ cdc_image_map('r.msg.before') }} as before_map,
                    case
                        {#- a compressed update: columns missing from after keep their before value #}
                        when {{ u('r.msg.op_type') }} = 'U' and r.msg.before is not null and r.msg.after is not null
                            then map_concat(
                                transform_values({{ cdc_image_map('r.msg.before') }}, (n, v) -> if(
                                    map_contains_key({{ cdc_image_map('r.msg.after') }}, n),
                                    {{ cdc_image_map('r.msg.after') }}[n],
                                    v
                                )),
                                map_filter({{ cdc_image_map('r.msg.after') }},
                                    (n, v) -> not map_contains_key({{ cdc_image_map('r.msg.before') }}, n))
                            )
                        else {{ cdc_image_map('r.msg.after') }}
                    end as after_map
                from (
                    select
                        rec.*,
                        from_json({{ cdc_mark_json('rec.value_text') }}, '{{ envelope_schema }}',
                            map('columnNameOfCorruptRecord', '_corrupt')) as msg
                    from {{ records }} as rec
                    where rec.resolved_format in ('{{ format_ids | join("', '") }}')
                ) as r
            ) as i
        ) as c
    ) as e
    {#- a key-less update (multiset) also deletes its old row, ordered just before it #}
    lateral view inline(case
        when e.parse_error is null and e.op_type = 'U' and size(e.key_columns) = 0 and e.before_map is not null
            then array(
                named_struct('vendor_op', '<before image>', 'row_index', 0),
                named_struct('vendor_op', e.op_type, 'row_index', 1)
            )
        else array(named_struct('vendor_op', e.op_type, 'row_index', 0))
    end) x
{%- endmacro %}
