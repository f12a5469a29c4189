{#- The canonical change table: one row per row-level change, whatever the vendor format. -#}

with parsed as (

    select * from {{ ref('cdc_parsed') }}
    where record_kind = 'change'

),

final as (

    select
        record_id as change_id,
        source_format,
        source_database,
        source_schema,
        source_table,
        op,
        vendor_op,
        key_columns,
        pk,
        before_pk,
        before_image,
        after_image,
        column_types,
        unavailable_columns,
        event_time,
        vendor_sequence,
        apply_order,
        transaction_id,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        kafka_timestamp,
        row_index,
        ingested_at,
        batch_id
    from parsed

)

select * from final
