{#
    aws-dms-json: AWS Database Migration Service, Kafka (and Kinesis) target, JSON message format.

    - message: `data` (the row) and `metadata` {timestamp (ISO-8601, microseconds, UTC),
      record-type (data | control), operation, partition-key-type, schema-name, table-name,
      transaction-id, ...}; optional before image, either as the `before-image` object
      (BeforeImageSettings) or as `BI_<column>` fields inside `data` (which are not row columns);
    - operation load (full load: sorts before every incremental change) / insert / update /
      delete; control records create-table / drop-table / change-columns / add-column /
      drop-column / rename-column / column-type-change are DDL - all mapped by the op seed; a
      null-value Kafka record is a tombstone control event;
    - a delete's row is in `data`;
    - key: DMS messages name no key columns: configure them in the cdc_key_overrides seed;
      without them the table is a multiset, and an update with a before image also emits
      `<before image>`, the delete of its old row (an update without a before image can only add
      its new row);
    - order: metadata.timestamp (microseconds), then Kafka partition / offset.
#}

{% macro parse_aws_dms_json(records, format_ids) -%}
    {%- set u = cdc_unmark_value -%}
    {%- set metadata_schema -%}
        struct<`timestamp`: string, `record-type`: string, operation: string, `partition-key-type`: string,
        `schema-name`: string, `table-name`: string, `transaction-id`: string, `transaction-record-id`: string,
        `commit-timestamp`: string>
    {%- endset -%}
    {#- BI_<column> fields are the before image only when <column> is a field of data as well #}
    {%- set is_before_field = "(left(n, 3) = 'BI_' and map_contains_key(r.data_map, substr(n, 4)))" -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': 'x.row_index',
            'vendor_op': 'x.vendor_op',
            'source_schema': u('e.meta.`schema-name`'),
            'source_table': u('e.meta.`table-name`'),
            'key_columns': 'array()',
            'before_values': 'e.before_map',
            'after_values': "case when x.vendor_op <> '<before image>' then e.after_map end",
            'before_image': cdc_map_to_json('e.before_map'),
            'after_image': cdc_map_to_json("case when x.vendor_op <> '<before image>' then e.after_map end"),
            'event_time': 'e.event_time',
            'vendor_sequence': u('e.meta.`timestamp`'),
            'apply_order': cdc_apply_order(
                "case when e.operation = 'load' then '0' else '1' end",
                ['unix_micros(e.event_time)'], 'e.partition', 'e.offset', 'x.row_index'),
            'transaction_id': u('e.meta.`transaction-id`'),
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            i.*,
            case
                when i.operation = 'delete' then i.row_map
                when i.operation = 'update' then i.update_before_map
            end as before_map,
            case when i.operation in ('load', 'insert', 'update') then i.row_map end as after_map,
            cast({{ u('i.meta.`timestamp`') }} as timestamp) as event_time,
            case
                when i.value is null then null
                when i.msg.`_corrupt` is not null or i.msg is null then 'invalid JSON'
                when i.meta is null then 'shape does not match ' || i.resolved_format || ': no metadata'
                when i.operation is null then 'shape does not match ' || i.resolved_format || ': no metadata.operation'
                when i.operation in ('load', 'insert', 'update', 'delete') and i.row_map is null
                    then 'shape does not match ' || i.resolved_format || ': ' || i.operation || ' without a data object'
            end as parse_error
        from (
            select
                r.*,
                map_filter(r.data_map, (n, v) -> not {{ is_before_field }}) as row_map,
                coalesce(
                    {{ cdc_image_map('r.msg.`before-image`') }},
                    case when size(map_filter(r.data_map, (n, v) -> {{ is_before_field }})) > 0 then
                        transform_keys(map_filter(r.data_map, (n, v) -> {{ is_before_field }}), (n, v) -> substr(n, 4))
                    end
                ) as update_before_map
            from (
                select
                    m.*,
                    from_json(m.msg.metadata, '{{ metadata_schema }}') as meta,
                    {#- a null-value Kafka record (log compaction) changes nothing #}
                    case
                        when m.value is null then '<tombstone>'
                        else {{ u("from_json(m.msg.metadata, 'struct<operation: string>').operation") }}
                    end as operation,
                    {{ cdc_image_map('m.msg.data') }} as data_map
                from (
                    select
                        rec.*,
                        from_json({{ cdc_mark_json('rec.value_text') }},
                            'struct<data: string, `before-image`: string, metadata: string, `_corrupt`: string>',
                            map('columnNameOfCorruptRecord', '_corrupt')) as msg
                    from {{ records }} as rec
                    where rec.resolved_format in ('{{ format_ids | join("', '") }}')
                ) as m
            ) as r
        ) as i
    ) as e
    {#- a key-less update (multiset) also deletes its old row, ordered just before it #}
    lateral view inline(case
        when e.parse_error is null and e.operation = 'update' and e.before_map is not null
            then array(
                named_struct('vendor_op', '<before image>', 'row_index', 0),
                named_struct('vendor_op', e.operation, 'row_index', 1)
            )
        else array(named_struct('vendor_op', e.operation, 'row_index', 0))
    end) x
{%- endmacro %}
