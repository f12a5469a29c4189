{#- SPEC's gold contract: one row per live (source table, key), the current row as JSON: the
    live keys of cdc_key_state, i.e. the current versions of gold.cdc_history (a partition of
    it, is_current). -#}

with key_state as (

    select * from {{ ref('cdc_key_state') }}

),

final as (

    select
        source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        row,
        last_op,
        last_event_time,
        vendor_sequence,
        apply_order,
        change_id
    from key_state
    where not is_deleted

)

select * from final
