{#
    shareplex-json: the SharePlex serialization of OceanBase OMS (shared/formats/oceanbase-oms.txt).

    - {"data": {..}, "meta": {"op", "table", "rowid", "scn", "time", "trans", ..}, "key": {..},
      "sql": {"ddl": ".."}}; meta.op ins / upd / del / ddl (mapped by the op seed);
    - ins and del: `data` is the whole row (del: the row before the delete);
    - upd: `data` holds ONLY the changed columns and `key` the whole row before the change; the
      after image is `key` overlaid with `data` (a changed column absent from `key` is added,
      as the document's own example does); an upd without `key` cannot be completed and is
      quarantined;
    - meta.table is {database}.{table};
    - the key: the messages never name the key columns. Unless the table's key columns are
      configured (seeds/cdc_key_overrides.csv, which then reads them from the images and also
      sees key-changing updates), the key is meta.rowid = {table}-{key values joined by \u0001}:
      pk {"rowid": "<key values>"} without the table prefix. Known slip (SPEC): a rowid may lack
      the \u0001 separator (the document's insert example sends 3129 where its update sends
      3\u0001129), so separators are dropped from the identity: the same row gets the same key
      either way. Without configured key columns a key-changing update cannot be seen (the
      rowid is the only key the message carries);
    - ddl: the statement is sql.ddl;
    - order: meta.scn = {timestamp seconds}{increment of up to five digits}, read as (first ten
      digits, rest); when absent or "null", meta.time (seconds); then Kafka partition / offset.
#}

{% macro _shareplex_overlay(base, top) -%}
    {#- `base` with every column of `top` replaced or added, base's column order kept; map_concat
        alone would fail the query on the repeated keys -#}
    map_concat(
        map_from_arrays(
            map_keys({{ base }}),
            transform(map_keys({{ base }}), k -> if(map_contains_key({{ top }}, k), {{ top }}[k], {{ base }}[k]))
        ),
        map_filter({{ top }}, (k, v) -> not map_contains_key({{ base }}, k))
    )
{%- endmacro %}

{% macro parse_shareplex_json(records, format_ids) -%}
    {%- set envelope_schema -%}
        struct<data: string, meta: string, `key`: string, `sql`: string, `_corrupt`: string>
    {%- endset -%}
    {%- set meta_schema -%}
        struct<`time`: string, op: string, posttime: string, idx: string, size: string, seq: string,
        `table`: string, rowid: string, trans: string, scn: string>
    {%- endset -%}
    {%- set u = cdc_unmark_value -%}
    {#- the rowid key is added to the value maps (not to the images) so that pk and before_pk
        agree: an update keyed by rowid never looks like a key change -#}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': '0',
            'vendor_op': 'e.vendor_op',
            'source_database': 'e.source_database',
            'source_table': 'e.source_table',
            'key_columns': "case when e.rowid_key is not null then array('rowid') else cast(array() as array<string>) end",
            'key_values': "case when e.rowid_key is not null then map('rowid', e.rowid_key) end",
            'before_values': "case when e.rowid_key is not null and e.before_map is not null then "
                ~ "map_concat(map_filter(e.before_map, (k, v) -> k <> 'rowid'), map('rowid', e.rowid_key)) else e.before_map end",
            'after_values': "case when e.rowid_key is not null and e.after_map is not null then "
                ~ "map_concat(map_filter(e.after_map, (k, v) -> k <> 'rowid'), map('rowid', e.rowid_key)) else e.after_map end",
            'before_image': cdc_map_to_json('e.before_map'),
            'after_image': cdc_map_to_json('e.after_map'),
            'event_time': 'to_timestamp(e.change_time)',
            'vendor_sequence': 'e.scn',
            'apply_order': cdc_apply_order("'1'", ['e.seq1', 'e.seq2'], 'e.partition', 'e.offset', '0'),
            'transaction_id': 'e.trans',
            'statement': 'e.statement',
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            p.*,
            case
                when p.vendor_op = 'ins' then p.data_map
                when p.vendor_op = 'upd' then {{ _shareplex_overlay('p.key_map', 'p.data_map') }}
            end as after_map,
            case
                when p.vendor_op = 'upd' then p.key_map
                when p.vendor_op = 'del' then p.data_map
            end as before_map,
            {#- scn is {seconds}{increment}: split after the ten digits of the seconds #}
            case when length(p.seq_digits) > 10 then left(p.seq_digits, 10) else p.seq_digits end as seq1,
            case when length(p.seq_digits) > 10 then substr(p.seq_digits, 11) end as seq2,
            case
                when p.value is null then 'shape does not match ' || p.resolved_format || ': the record has no value'
                when p.msg is null or p.msg.`_corrupt` is not null then 'invalid JSON'
                when p.meta is null then 'shape does not match ' || p.resolved_format || ': no meta'
                when p.vendor_op is null then 'shape does not match ' || p.resolved_format || ': no meta.op'
                when p.vendor_op in ('ins', 'upd', 'del') and p.data_map is null
                    then 'shape does not match ' || p.resolved_format || ': ' || p.vendor_op || ' without data'
                when p.vendor_op = 'upd' and p.key_map is null
                    then 'shape does not match ' || p.resolved_format
                        || ': upd without key (the before image that completes the changed columns of data)'
                when p.vendor_op = 'ddl' and p.statement is null
                    then 'shape does not match ' || p.resolved_format || ': ddl without sql.ddl'
            end as parse_error
        from (
            select
                m.*,
                case when m.full_table like '%.%' then substr(m.full_table, 1, instr(m.full_table, '.') - 1) end
                    as source_database,
                case when m.full_table like '%.%' then substr(m.full_table, instr(m.full_table, '.') + 1) else m.full_table end
                    as source_table,
                {#- {table}-{values}: drop the table prefix, and the \u0001 separators (known slip) #}
                nullif(regexp_replace(
                    case
                        when startswith(m.rowid, m.full_table || '-') then substr(m.rowid, length(m.full_table) + 2)
                        else m.rowid
                    end,
                    '\u0001', ''
                ), '') as rowid_key,
                coalesce(
                    case when m.scn rlike '^[0-9]+$' then m.scn end,
                    cast(unix_timestamp(to_timestamp(m.change_time)) as string)
                ) as seq_digits
            from (
                select
                    r.*,
                    {{ u('r.meta.op') }} as vendor_op,
                    {{ u('r.meta.`table`') }} as full_table,
                    {{ u('r.meta.rowid') }} as rowid,
                    {{ u('r.meta.scn') }} as scn,
                    {{ u('r.meta.`time`') }} as change_time,
                    {{ u('r.meta.trans') }} as trans,
                    {{ cdc_image_map('r.msg.data') }} as data_map,
                    {{ cdc_image_map('r.msg.`key`') }} as key_map,
                    {{ u("from_json(r.msg.`sql`, 'struct<ddl: string>').ddl") }} as statement
                from (
                    select
                        b.*,
                        from_json(b.msg.meta, '{{ meta_schema }}') as meta
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
