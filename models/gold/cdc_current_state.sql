{#- SPEC's gold contract: one row per live (source table, key), the current row as JSON: the
    current versions of gold.cdc_history (a key's open version, with a row: the stored
    versions' partition is_current, less those a closer has ended), read from the stored
    versions as the view decides them (cdc_history_current_versions). The typed current-rows
    views read the same (cdc_create_typed_views), so "current" is decided once. It depends on
    the history view all the same, so that selecting +cdc_current_state builds and tests it -#}

-- depends_on: {{ ref('cdc_history') }}

with current_versions as (

    {{ cdc_history_current_versions(ref('cdc_history_versions')) }}

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
        change_id,
        unknown_columns,
        copy_number
    from current_versions

)

select * from final
