{#- What bronze holds per topic partition: how many records, which offsets, when last landed. -#}

with records as (

    select * from {{ source('bronze', 'kafka_records') }}

),

final as (

    select
        topic,
        `partition`,
        count(*) as records,
        min(offset) as first_offset,
        max(offset) as last_offset,
        max(offset) - min(offset) + 1 - count(*) as offset_gaps,
        max(timestamp) as last_record_timestamp,
        max(ingested_at) as last_ingested_at
    from records
    group by topic, `partition`

)

select * from final
