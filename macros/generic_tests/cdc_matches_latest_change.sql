{% test cdc_matches_latest_change(model, changes) %}
{#-
    Every live gold row equals the latest surviving change of its key, recomputed from the whole
    silver change table, and every key whose latest surviving change is not a delete is live in
    gold. Surviving: not older than a truncate of its table. Runs on gold.cdc_current_state.
    A table without a key is a multiset: each row is there as many times as its surviving
    inserts outnumber its deletes. A change that holds Debezium's placeholder for a value it
    did not send is compared by its key and order only: gold completed its row from earlier
    versions (cdc_history_complete_unavailable). A change is named by its delivery
    (cdc_delivery: its vendor position, or its apply order without one), not its apply
    order: a change delivered again at a later offset is the same change, and gold may hold
    either delivery.
-#}

with changes as (

    select * from {{ changes }}

),

effects as (

    select
        source_database, source_schema, source_table, pk, op,
        case when not coalesce(size(unavailable_columns) > 0, false) then after_image end as row,
        apply_order, not coalesce(size(key_columns) > 0, false) as keyless, vendor_sequence
    from changes
    where
        op in ('c', 'r', 'd')
        {#- a keyless table's update that leaves its row as it was changes nothing #}
        or (op = 'u' and (coalesce(size(key_columns) > 0, false) or before_pk is not null or before_image is null))
    union all
    {#- a key-changing update removes its old key #}
    select
        source_database, source_schema, source_table, before_pk as pk, 'd' as op, null as row, apply_order,
        not coalesce(size(key_columns) > 0, false) as keyless, vendor_sequence
    from changes
    where op = 'u' and before_pk is not null

),

truncations as (

    select source_database, source_schema, source_table, max(apply_order) as truncated_at
    from changes
    where op = 't'
    group by source_database, source_schema, source_table

),

ranked as (

    select
        effects.*,
        row_number() over (
            partition by effects.source_database, effects.source_schema, effects.source_table, effects.pk
            order by effects.apply_order desc, case when effects.op = 'd' then 0 else 1 end
        ) as effect_rank
    from effects
    left join truncations
        on
            effects.source_database <=> truncations.source_database
            and effects.source_schema <=> truncations.source_schema
            and effects.source_table = truncations.source_table
    where truncations.truncated_at is null or effects.apply_order > truncations.truncated_at

),

expected as (

    select source_database, source_schema, source_table, pk, row, {{ cdc_delivery() }} as delivery
    from ranked
    where effect_rank = 1 and op <> 'd' and not keyless

    union all

    select source_database, source_schema, source_table, pk, latest.row, latest.delivery
    from (
        select
            source_database, source_schema, source_table, pk,
            max_by(named_struct('row', row, 'delivery', {{ cdc_delivery() }}), apply_order)
                filter (where op <> 'd') as latest,
            sum(case when op = 'd' then -1 else 1 end) as copies
        from (
            {#- a change delivered again counts once #}
            select
                *,
                row_number() over (
                    partition by source_database, source_schema, source_table, pk, op, {{ cdc_delivery() }}
                    order by apply_order
                ) as delivery
            from ranked
            where keyless
        ) as keyless_effects
        where delivery = 1
        group by source_database, source_schema, source_table, pk
        having copies > 0
    ) as multiset
    lateral view explode(sequence(1, copies)) copy as copy_number

),

completed_orders as (

    select distinct apply_order from changes
    where size(unavailable_columns) > 0

),

actual as (

    select /*+ broadcast(completed_orders) */
        gold.source_database, gold.source_schema, gold.source_table, gold.pk,
        case when completed_orders.apply_order is null then gold.row end as row,
        gold.delivery
    from (
        select *, {{ cdc_delivery() }} as delivery
        from (select *, last_op as op from {{ model }}) as current_rows
    ) as gold
    left join completed_orders
        on gold.apply_order = completed_orders.apply_order

),

missing_from_gold as (

    select 'expected in gold, missing or different' as problem, * from expected
    except all
    select 'expected in gold, missing or different' as problem, * from actual

),

unexpected_in_gold as (

    select 'in gold, but not the latest change of its key' as problem, * from actual
    except all
    select 'in gold, but not the latest change of its key' as problem, * from expected

),

validation_errors as (

    select * from missing_from_gold
    union all
    select * from unexpected_in_gold

)

select * from validation_errors

{% endtest %}
