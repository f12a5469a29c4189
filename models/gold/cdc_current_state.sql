{#- SPEC's gold contract: one row per live (source table, key), the current row as JSON: the
    current versions of gold.cdc_history (a partition of it, is_current). -#}

with current_versions as (

    select * from {{ ref('cdc_history') }}
    where is_current

),

final as (

    select
        source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        row,
        op as last_op,
        valid_from as last_event_time,
        vendor_sequence,
        apply_order,
        change_id
    from current_versions

)

select * from final
