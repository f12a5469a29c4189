{% test cdc_matches_latest_change(model, changes) %}
{#-
    Every live gold row equals the latest surviving change of its key, recomputed from the whole
    silver change table, and every key whose latest surviving change is not a delete is live in
    gold. Surviving: not older than a truncate of its table. Runs on gold.cdc_current_state.
-#}

with changes as (

    select * from {{ changes }}

),

effects as (

    select source_database, source_schema, source_table, pk, op, after_image as row, apply_order
    from changes
    where op in ('c', 'u', 'r', 'd')
    union all
    {#- a key-changing update removes its old key #}
    select source_database, source_schema, source_table, before_pk as pk, 'd' as op, null as row, apply_order
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

    select source_database, source_schema, source_table, pk, row, apply_order
    from ranked
    where effect_rank = 1 and op <> 'd'

),

actual as (

    select source_database, source_schema, source_table, pk, row, apply_order
    from {{ model }}

),

missing_from_gold as (

    select 'expected in gold, missing or different' as problem, * from expected
    except
    select 'expected in gold, missing or different' as problem, * from actual

),

unexpected_in_gold as (

    select 'in gold, but not the latest change of its key' as problem, * from actual
    except
    select 'in gold, but not the latest change of its key' as problem, * from expected

),

validation_errors as (

    select * from missing_from_gold
    union all
    select * from unexpected_in_gold

)

select * from validation_errors

{% endtest %}
