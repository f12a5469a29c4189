{% test cdc_history_is_consistent(model) %}
{#-
    SCD2 history: the versions of a key follow each other without gap or overlap (each one ends
    where the next begins, in apply order; only the last is open), and a key's current version
    is its open version when that has a row (none after a delete, a truncate or a key change),
    so at most one is current. gold.cdc_current_state and the typed views read the current
    versions (the partition is_current), and cdc_matches_latest_change checks those against
    silver.

    The window over every version reads no row image: only the open and the current versions'
    partitions are read for the flags. The current versions are not compared with
    gold.cdc_current_state: it is a view of them, so that comparison could not fail.
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

wrong_current_flag as (

    {#- a version that is neither open nor current is right as it is: only the partitions
        (is_open, is_current) of the others are read #}
    select
        source_database, source_schema, source_table, pk, apply_order,
        case
            when is_current then 'current version is not an open version with a row'
            else 'open version with a row is not current'
        end as problem
    from {{ model }}
    where
        (is_open or is_current)
        and is_current is distinct from (is_open and row is not null)

),

several_current as (

    select source_database, source_schema, source_table, pk, max(apply_order) as apply_order, 'more than one current version' as problem
    from {{ model }}
    where is_current
    group by source_database, source_schema, source_table, pk
    having count(*) > 1

),

validation_errors as (

    select * from broken_chain
    union all
    select * from wrong_current_flag
    union all
    select * from several_current

)

select * from validation_errors

{% endtest %}
