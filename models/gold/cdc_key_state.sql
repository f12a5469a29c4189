{#
    The state of every (source table, key) ever seen, deleted ones included: each key's open
    version in gold.cdc_history (its latest change in apply order). A deleted or truncated key
    keeps its open version there, a tombstone with no row; late, older changes slot in before it
    and cannot bring the key back. A view: the history's write already decides every key's
    latest change, and the open versions are a partition of its stored versions (is_open,
    each ended by a closer after it when there is one), so keeping a second table of them
    would only cost a second write per build.
#}

with open_versions as (

    select * from {{ ref('cdc_history') }}
    where is_open

),

final as (

    select
        sha2(concat_ws(
            '|',
            coalesce(source_database, ''),
            coalesce(source_schema, ''),
            source_table,
            pk
        ), 256) as state_key,
        source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        row,
        op as last_op,
        not is_current as is_deleted,
        valid_from as last_event_time,
        vendor_sequence,
        apply_order,
        change_id,
        ingested_at
    from open_versions

)

select * from final
