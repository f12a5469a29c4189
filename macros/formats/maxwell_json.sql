{#
    maxwell-json: Maxwell's daemon (zendesk/maxwell) JSON rows, one row per Kafka record.

    - message: database, table, type, ts (epoch seconds), xid, xoffset / commit (position in the
      transaction; the last row has commit=true and no xoffset), data, old, optional position
      ("<binlog file>:<pos>", output_binlog_position), gtid, server_id, thread_id, primary_key
      (values) / primary_key_columns (names), sql and def for DDL;
    - type insert / update / delete; bootstrap-insert is a full-load row (sorts before every
      incremental change) between the bootstrap-start / bootstrap-complete markers; DDL types
      database-create / -alter / -drop, table-create / -alter / -drop carry `sql` - all mapped by
      the op seed; a null-value Kafka record is a tombstone control event;
    - an update's `old` holds only the columns that changed, with their old values: the before
      image is `data` overlaid with `old` (so a key change is seen); a delete's row is in `data`;
    - key: primary_key_columns, else the `pk.<column>` fields of the Kafka record key (Maxwell's
      default "hash" key {"database":..,"table":..,"pk.id":..}); without either the table is a
      multiset and an update also emits `<before image>`, the delete of its old row;
    - order: the binlog position (file number, offset, xoffset) when Maxwell writes it, else the
      Kafka partition / offset (Maxwell's own per-key order); xid is not an order.
#}

{% macro parse_maxwell_json(records, format_ids) -%}
    {%- set u = cdc_unmark_value -%}
    {%- set envelope_schema -%}
        struct<database: string, `table`: string, type: string, ts: string, xid: string, xoffset: string,
        `commit`: string, position: string, gtid: string, server_id: string, thread_id: string,
        primary_key: string, primary_key_columns: array<string>, data: string, old: string, `sql`: string,
        `_corrupt`: string>
    {%- endset -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': 'x.row_index',
            'vendor_op': 'x.vendor_op',
            'source_database': u('e.msg.database'),
            'source_table': u('e.msg.`table`'),
            'key_columns': 'e.key_columns',
            'key_values': 'e.key_values',
            'before_values': 'e.before_map',
            'after_values': "case when x.vendor_op <> '<before image>' then e.after_map end",
            'before_image': cdc_map_to_json('e.before_map'),
            'after_image': cdc_map_to_json("case when x.vendor_op <> '<before image>' then e.after_map end"),
            'event_time': cdc_epoch_to_timestamp(u('e.msg.ts')),
            'vendor_sequence': 'e.position',
            'apply_order': cdc_apply_order(
                "case when e.type = 'bootstrap-insert' then '0' else '1' end",
                ['e.binlog_file', 'e.binlog_pos', 'e.row_in_transaction'],
                'e.partition', 'e.offset', 'x.row_index'),
            'transaction_id': u('e.msg.xid'),
            'statement': u('e.msg.`sql`'),
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            i.*,
            case when i.type in ('update', 'delete') then i.before_image_map end as before_map,
            case when i.type in ('insert', 'update', 'bootstrap-insert') then i.data_map end as after_map,
            case
                when i.value is null then null
                when i.msg.`_corrupt` is not null or i.msg is null then 'invalid JSON'
                when i.msg.type is null then 'shape does not match ' || i.resolved_format || ': no type'
                when i.type in ('insert', 'update', 'delete', 'bootstrap-insert') and i.data_map is null
                    then 'shape does not match ' || i.resolved_format || ': ' || i.type || ' without a data object'
            end as parse_error
        from (
            select
                k.*,
                {#- old = the changed columns' old values: overlay them on data for the before image #}
                case
                    when k.type = 'update' then transform_values(k.data_map,
                        (c, v) -> if(coalesce(map_contains_key(k.old_map, c), false), k.old_map[c], v))
                    else k.data_map
                end as before_image_map,
                {#- binlog file number and offset order rows across transactions; xoffset inside one #}
                nullif(regexp_extract(k.position, '([0-9]+):[0-9]+$', 1), '') as binlog_file,
                nullif(regexp_extract(k.position, ':([0-9]+)$', 1), '') as binlog_pos,
                case
                    when k.position is null then null
                    when {{ u('k.msg.xoffset') }} is not null then {{ u('k.msg.xoffset') }}
                    {#- the transaction's last row carries commit=true instead of an xoffset #}
                    when {{ u('k.msg.`commit`') }} = 'true' then '99999999999999999999'
                end as row_in_transaction,
                coalesce(
                    case
                        when size(k.msg.primary_key_columns) > 0
                            then array_distinct(filter(k.msg.primary_key_columns, c -> c is not null))
                    end,
                    map_keys(k.key_pk_map),
                    array()
                ) as key_columns,
                case
                    {#- map_from_arrays fails the run on null or duplicate names: only a clean pairing #}
                    when size(k.msg.primary_key_columns) > 0
                        and size(k.msg.primary_key_columns) = size(k.primary_key_values)
                        and size(array_distinct(k.msg.primary_key_columns)) = size(k.msg.primary_key_columns)
                        and not exists(k.msg.primary_key_columns, c -> c is null)
                        then map_from_arrays(k.msg.primary_key_columns, k.primary_key_values)
                    else k.key_pk_map
                end as key_values
            from (
                select
                    r.*,
                    {#- a null-value Kafka record (log compaction) changes nothing #}
                    case when r.value is null then '<tombstone>' else {{ u('r.msg.type') }} end as type,
                    {{ u('r.msg.position') }} as position,
                    {{ cdc_image_map('r.msg.data') }} as data_map,
                    {{ cdc_image_map('r.msg.old') }} as old_map,
                    from_json(r.msg.primary_key, 'array<string>') as primary_key_values,
                    {#- Maxwell's default Kafka key: {"database": .., "table": .., "pk.<column>": <value>} #}
                    transform_keys(
                        map_filter({{ cdc_image_map(cdc_mark_json('r.key_text')) }}, (c, v) -> c like 'pk.%'),
                        (c, v) -> substr(c, 4)
                    ) as key_pk_map
                from (
                    select
                        rec.*,
                        from_json({{ cdc_mark_json('rec.value_text') }}, '{{ envelope_schema }}',
                            map('columnNameOfCorruptRecord', '_corrupt')) as msg
                    from {{ records }} as rec
                    where rec.resolved_format in ('{{ format_ids | join("', '") }}')
                ) as r
            ) as k
        ) as i
    ) as e
    {#- a key-less update (multiset) also deletes its old row, ordered just before it #}
    lateral view inline(case
        when e.parse_error is null and e.type = 'update' and size(e.key_columns) = 0
            then array(
                named_struct('vendor_op', '<before image>', 'row_index', 0),
                named_struct('vendor_op', e.type, 'row_index', 1)
            )
        else array(named_struct('vendor_op', e.type, 'row_index', 0))
    end) x
{%- endmacro %}
