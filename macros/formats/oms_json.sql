{#
    oms-json: OceanBase Migration Service (OMS) "Default" and "DefaultExtendColumnType"
    serialization (shared/formats/oceanbase-oms.txt).

    - {"prevStruct": {..}, "postStruct": {..}, "allMetaData": {..}, "recordType": ".."};
      recordType INSERT / UPDATE / DELETE / ROW / HEARTBEAT / DDL (mapped by the op seed);
      DELETE carries prevStruct only, INSERT / ROW / DDL postStruct only, UPDATE both, HEARTBEAT
      neither;
    - ROW is a full-load row: same shape as INSERT, ordered before every incremental change
      (phase 0);
    - the key: allMetaData.record_primary_key names the key columns and record_primary_value
      holds their values, several joined with \u0001. Key values an image lacks are taken from
      record_primary_value (the document's own examples name key columns absent from the images);
    - DefaultExtendColumnType adds `__light_type` ({"col": {"schemaType": "TINYINT"}}) inside
      the images: it is type metadata, never a column of the row; it becomes column_types;
    - `db` is {tenant}.{database} for OceanBase sources (dbType OB_MYSQL, OB_ORACLE, OCEANBASE,
      OB_IN_ORACLE_MODE): source_database is the database part; other sources send the database;
    - DDL: the statement is postStruct.ddl (the only field of that image besides __light_type);
    - order: storeDataSequence = {timestamp seconds}{increment of up to five digits}, read as
      (first ten digits, rest) so that padded and unpadded increments both sort; when it is
      absent (the document shows null) the timestamp (seconds), else the incremental checkpoint
      (seconds), with increment 0; then Kafka partition / offset. Full-load rows have no
      sequence (their checkpoint holds key values, not a position);
    - DECIMAL text may be plain or scientific (1.25E-10, 0E-24): kept exactly as sent.
#}

{% macro _oms_json_light_types(light_type_json) -%}
    {#- `__light_type` {"col": {"schemaType": "X", ...}} -> column_types {"col": {"type": "X", ...}} -#}
    {{ cdc_unmark_json("to_json(transform_values(
        from_json(" ~ light_type_json ~ ", 'map<string, map<string, string>>'),
        (col, meta) -> map_concat(
            map('type', meta['schemaType']),
            map_filter(meta, (name, v) -> name not in ('type', 'schemaType'))
        )
    ))") }}
{%- endmacro %}

{% macro parse_oms_json(records, format_ids) -%}
    {%- set envelope_schema -%}
        struct<prevStruct: string, postStruct: string, allMetaData: string, recordType: string, `_corrupt`: string>
    {%- endset -%}
    {%- set meta_schema -%}
        struct<checkpoint: string, record_primary_key: string, record_primary_value: string,
        source_identity: string, dbType: string, storeDataSequence: string, table_name: string,
        db: string, `timestamp`: string, uniqueId: string, transId: string, clusterId: string,
        ddlType: string>
    {%- endset -%}
    {%- set u = cdc_unmark_value -%}
    {%- set exprs = cdc_record_passthrough('e') -%}
    {%- do exprs.update({
            'row_index': '0',
            'vendor_op': 'e.vendor_op',
            'source_database': 'e.source_database',
            'source_table': 'e.table_name',
            'key_columns': 'e.key_columns',
            'key_values': 'e.key_values',
            'before_values': 'e.before_values',
            'after_values': 'e.after_values',
            'before_image': cdc_map_to_json('e.before_map'),
            'after_image': cdc_map_to_json('e.after_map'),
            'column_types': "case when e.light_type is not null then " ~ _oms_json_light_types('e.light_type') ~ " end",
            'event_time': cdc_epoch_to_timestamp('e.ts_seconds'),
            'vendor_sequence': 'e.vendor_sequence',
            'apply_order': cdc_apply_order("case when e.vendor_op = 'ROW' then '0' else '1' end",
                ['e.seq1', 'e.seq2'], 'e.partition', 'e.offset', '0'),
            'transaction_id': 'e.trans_id',
            'statement': 'e.statement',
            'parse_error': 'e.parse_error',
        }) -%}
    select
        {{ cdc_parser_select(exprs) }}
    from (
        select
            p.*,
            {#- key values the image lacks come from record_primary_value, so that pk and
                before_pk are derived from the same values (the images themselves stay as sent) #}
            {%- for image in ['before', 'after'] %}
            case
                {#- the image holds every key column (nearly always): itself, without the lambda
                    (Spark evaluates lambdas outside its generated code) #}
                when p.key_values is null
                    or size(array_except(map_keys(p.key_values), map_keys(p.{{ image }}_map))) = 0
                    then p.{{ image }}_map
                else map_concat(p.{{ image }}_map, map_filter(p.key_values,
                    (k, v) -> not map_contains_key(p.{{ image }}_map, k)))
            end as {{ image }}_values,
            {%- endfor %}
            {#- storeDataSequence is {seconds}{increment}: split after the ten digits of the seconds #}
            case when p.vendor_op <> 'ROW' then
                case when length(p.seq_digits) > 10 then left(p.seq_digits, 10) else p.seq_digits end
            end as seq1,
            case when p.vendor_op <> 'ROW' and length(p.seq_digits) > 10 then substr(p.seq_digits, 11) end as seq2,
            case
                when p.value is null then 'shape does not match ' || p.resolved_format || ': the record has no value'
                when p.msg is null or p.msg.`_corrupt` is not null then 'invalid JSON'
                when p.vendor_op is null then 'shape does not match ' || p.resolved_format || ': no recordType'
                when p.vendor_op in ('INSERT', 'ROW', 'UPDATE') and p.post_map_raw is null
                    then 'shape does not match ' || p.resolved_format || ': ' || p.vendor_op || ' without postStruct'
                when p.vendor_op = 'DELETE' and p.pre_map_raw is null
                    then 'shape does not match ' || p.resolved_format || ': DELETE without prevStruct'
                when p.vendor_op = 'DDL' and p.statement is null
                    then 'shape does not match ' || p.resolved_format || ': DDL without postStruct.ddl'
                when size(p.key_names) > 0 and size(array_distinct(p.key_names)) < size(p.key_names)
                    then 'shape does not match ' || p.resolved_format || ': record_primary_key repeats a column'
                when size(p.key_names) > 0 and p.key_parts is not null and size(p.key_parts) <> size(p.key_names)
                    then 'shape does not match ' || p.resolved_format || ': record_primary_key names '
                        || size(p.key_names) || ' columns but record_primary_value holds '
                        || size(p.key_parts) || ' values'
            end as parse_error
        from (
            select
                m.*,
                case
                    when m.vendor_op in ('DDL', 'HEARTBEAT') then null
                    when map_contains_key(m.pre_map_raw, '__light_type')
                        then map_filter(m.pre_map_raw, (k, v) -> k <> '__light_type')
                    else m.pre_map_raw
                end as before_map,
                case
                    when m.vendor_op in ('DDL', 'HEARTBEAT') then null
                    when map_contains_key(m.post_map_raw, '__light_type')
                        then map_filter(m.post_map_raw, (k, v) -> k <> '__light_type')
                    else m.post_map_raw
                end as after_map,
                case when size(m.key_names) > 0 then m.key_names else cast(array() as array<string>) end as key_columns,
                {#- map_from_arrays fails the query on a length mismatch or a repeated name: check first #}
                case
                    when size(m.key_names) > 0
                        and size(m.key_names) = size(m.key_parts)
                        and size(array_distinct(m.key_names)) = size(m.key_names)
                        then map_from_arrays(m.key_names, m.key_parts)
                end as key_values,
                case when m.vendor_op = 'DDL' then {{ u("element_at(m.post_map_raw, 'ddl')") }} end as statement,
                case
                    {#- OceanBase sources send {tenant}.{database}; MySQL, Oracle, DB2 the database alone #}
                    when m.db like '%.%' and (m.db_type is null or upper(m.db_type) like 'OB%' or upper(m.db_type) = 'OCEANBASE')
                        then substr(m.db, instr(m.db, '.') + 1)
                    else m.db
                end as source_database,
                coalesce(
                    m.store_sequence,
                    case when m.ts_seconds rlike '^[0-9]+$' then m.ts_seconds end,
                    case when m.checkpoint rlike '^[0-9]+$' then m.checkpoint end
                ) as seq_digits,
                coalesce(m.store_sequence, m.ts_seconds, m.checkpoint) as vendor_sequence
            from (
                select
                    r.*,
                    {{ u('r.msg.recordType') }} as vendor_op,
                    {{ cdc_image_map('r.msg.prevStruct') }} as pre_map_raw,
                    {{ cdc_image_map('r.msg.postStruct') }} as post_map_raw,
                    coalesce(
                        element_at({{ cdc_image_map('r.msg.postStruct') }}, '__light_type'),
                        element_at({{ cdc_image_map('r.msg.prevStruct') }}, '__light_type')
                    ) as light_type,
                    {{ u('r.meta.table_name') }} as table_name,
                    {{ u('r.meta.db') }} as db,
                    {{ u('r.meta.dbType') }} as db_type,
                    {{ u('r.meta.transId') }} as trans_id,
                    {{ u('r.meta.checkpoint') }} as checkpoint,
                    {{ u('r.meta.`timestamp`') }} as ts_seconds,
                    case when {{ u('r.meta.storeDataSequence') }} rlike '^[0-9]+$'
                        then {{ u('r.meta.storeDataSequence') }} end as store_sequence,
                    {#- \u0001 joins several key names / values; an empty name list means no key #}
                    filter(split({{ u('r.meta.record_primary_key') }}, '\u0001'), k -> k <> '') as key_names,
                    split({{ u('r.meta.record_primary_value') }}, '\u0001') as key_parts
                from (
                    select
                        b.*,
                        from_json(b.msg.allMetaData, '{{ meta_schema }}') as meta
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
