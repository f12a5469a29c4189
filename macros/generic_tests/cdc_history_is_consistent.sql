{% test cdc_history_is_consistent(model, current_state) %}
{#-
    SCD2 history: the versions of a key follow each other without gap or overlap (each one ends
    where the next begins, in apply order; only the last is open), at most one is current, and
    the current versions are exactly the live rows of `current_state`.
-#}

with versions as (

    select
        *,
        lead(apply_order) over key_order as following_order,
        lead(valid_from) over key_order as following_valid_from
    from {{ model }}
    window key_order as (partition by source_database, source_schema, source_table, pk order by apply_order)

),

broken_chain as (

    select source_database, source_schema, source_table, pk, apply_order, 'interval does not end where the next begins' as problem
    from versions
    where
        next_apply_order is distinct from following_order
        or valid_to is distinct from following_valid_from
        or is_open is distinct from (next_apply_order is null)

),

several_current as (

    select source_database, source_schema, source_table, pk, max(apply_order) as apply_order, 'more than one current version' as problem
    from versions
    where is_current
    group by source_database, source_schema, source_table, pk
    having count(*) > 1

),

current_versions as (

    select source_database, source_schema, source_table, pk, apply_order, row from versions where is_current

),

live_rows as (

    select source_database, source_schema, source_table, pk, apply_order, row from {{ current_state }}

),

current_mismatch as (

    select source_database, source_schema, source_table, pk, apply_order, 'current version is not the live row' as problem
    from (select * from current_versions except select * from live_rows) as extra
    union all
    select source_database, source_schema, source_table, pk, apply_order, 'live row has no current version' as problem
    from (select * from live_rows except select * from current_versions) as missing

),

validation_errors as (

    select * from broken_chain
    union all
    select * from several_current
    union all
    select * from current_mismatch

)

select * from validation_errors

{% endtest %}
