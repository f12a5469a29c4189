{% test cdc_accounts_for_every_record(model, parsed) %}
{#-
    SPEC rule 8, the accounting identity: every bronze record (the model) ends in exactly one of
    one or more canonical changes, one control event, or one quarantine row; and nothing in
    silver comes from a record that bronze does not hold.
-#}

with records as (

    select topic, partition, offset, true as in_bronze from {{ model }}

),

outcomes as (

    {#- min and max tell one kind from several; count(distinct) is a second aggregation #}
    select
        kafka_topic as topic,
        kafka_partition as partition,
        kafka_offset as offset,
        true as in_silver,
        min(record_kind) <> max(record_kind) as mixed_kinds,
        count(*) as outcome_rows,
        max(record_kind) as record_kind
    from {{ parsed }}
    group by kafka_topic, kafka_partition, kafka_offset

),

matched as (

    {#- one full outer join, not an anti join each way: the two sides are sorted once, and
        by the offset first, whose 64-bit sort prefix differs between most records (a
        topic's does not: the names begin alike), which makes the sort cheap #}
    select
        coalesce(records.topic, outcomes.topic) as topic,
        coalesce(records.partition, outcomes.partition) as partition,
        coalesce(records.offset, outcomes.offset) as offset,
        coalesce(records.in_bronze, false) as in_bronze,
        coalesce(outcomes.in_silver, false) as in_silver,
        outcomes.mixed_kinds,
        outcomes.outcome_rows,
        outcomes.record_kind
    from records
    full outer join outcomes
        on
            records.offset = outcomes.offset
            and records.partition = outcomes.partition
            and records.topic = outcomes.topic

),

validation_errors as (

    select
        topic,
        partition,
        offset,
        case
            when not in_silver then 'bronze record with no outcome in silver'
            when not in_bronze then 'silver outcome of no bronze record'
            when mixed_kinds then 'record ends in more than one kind of outcome'
            when record_kind in ('control', 'quarantine') and outcome_rows > 1
                then 'control event or quarantine counted more than once'
        end as problem
    from matched

)

select * from validation_errors
where problem is not null

{% endtest %}
