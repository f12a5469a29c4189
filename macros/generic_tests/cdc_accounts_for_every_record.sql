{% test cdc_accounts_for_every_record(model, parsed) %}
{#-
    SPEC rule 8, the accounting identity: every bronze record (the model) ends in exactly one of
    one or more canonical changes, one control event, or one quarantine row; and nothing in
    silver comes from a record that bronze does not hold.
-#}

with records as (

    select topic, partition, offset from {{ model }}

),

outcomes as (

    select
        kafka_topic as topic,
        kafka_partition as partition,
        kafka_offset as offset,
        count(distinct record_kind) as kinds,
        count(*) as outcome_rows,
        max(record_kind) as record_kind
    from {{ parsed }}
    group by kafka_topic, kafka_partition, kafka_offset

),

validation_errors as (

    select records.*, 'bronze record with no outcome in silver' as problem
    from records
    left anti join outcomes
        on
            records.topic = outcomes.topic
            and records.partition = outcomes.partition
            and records.offset = outcomes.offset

    union all

    select outcomes.topic, outcomes.partition, outcomes.offset, 'silver outcome of no bronze record' as problem
    from outcomes
    left anti join records
        on
            records.topic = outcomes.topic
            and records.partition = outcomes.partition
            and records.offset = outcomes.offset

    union all

    select topic, partition, offset, 'record ends in more than one kind of outcome' as problem
    from outcomes
    where kinds > 1

    union all

    select topic, partition, offset, 'control event or quarantine counted more than once' as problem
    from outcomes
    where kinds = 1 and record_kind in ('control', 'quarantine') and outcome_rows > 1

)

select * from validation_errors

{% endtest %}
