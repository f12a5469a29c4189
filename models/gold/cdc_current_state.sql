{#- SPEC's gold contract: one row per live (source table, key), the current row as JSON: the
    current versions of gold.cdc_history (a key's open version, with a row: the stored
    versions' partition is_current, less those a closer has ended). The typed current-rows
    views read the same (cdc_create_typed_views), so "current" is decided once, by the
    history's is_current. -#}

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
