{#- Records that change no rows: DDL, heartbeats, transaction markers, tombstones. -#}

with parsed as (

    select * from {{ ref('cdc_parsed') }}
    where record_kind = 'control'

),

final as (

    select
        record_id as event_id,
        control_kind,
        source_format,
        source_database,
        source_schema,
        source_table,
        vendor_op,
        statement,
        pk,
        event_time,
        vendor_sequence,
        apply_order,
        transaction_id,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        kafka_timestamp,
        ingested_at,
        batch_id
    from parsed

)

select * from final
