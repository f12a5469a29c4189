{#- Every record that could not be understood, with the reason and the raw message. -#}

with parsed as (

    select * from {{ ref('cdc_parsed') }}
    where record_kind = 'quarantine'

),

final as (

    select
        record_id as quarantine_id,
        quarantine_reason as reason,
        source_format,
        source_database,
        source_table,
        vendor_op,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        kafka_timestamp,
        row_index,
        raw_key,
        raw_value,
        raw_value_base64,
        ingested_at,
        batch_id
    from parsed

)

select * from final
