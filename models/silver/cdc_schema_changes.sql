{#- The schema-change log: every DDL statement the sources sent, in source order per table. -#}

with control_events as (

    select * from {{ ref('cdc_control_events') }}
    where control_kind = 'ddl'

),

final as (

    select
        event_id as schema_change_id,
        source_format,
        source_database,
        source_schema,
        source_table,
        vendor_op as ddl_kind,
        statement,
        event_time,
        vendor_sequence,
        apply_order,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        ingested_at
    from control_events

)

select * from final
