{#
    SCD type 2 history of every source row: one version per change of a key, valid from its
    change to the key's next change (in apply order, so late arrivals slot into place), the
    latest one current. A delete (or a truncate, or the old key of a key-changing update)
    closes the key's interval with a version whose row is null.

    A view of the stored versions (gold.cdc_history_versions): those of the closed partition as
    they are; those of the open partitions with the end of the first closer after them, which
    an in-order increment appended and the next settling writes into them
    (cdc_history_pending_ends). So an increment appends its versions instead of MERGEing the
    ends into the versions it closes, and every reader sees each version's end all the same.

    State as of a time:
        select * from gold.cdc_history
        where valid_from <= timestamp'2026-03-01' and (valid_to > timestamp'2026-03-01' or valid_to is null)
            and row is not null
#}

{{ config(materialized='view') }}

with closed_versions as (

    select * from {{ ref('cdc_history_versions') }}
    where not is_open

),

open_versions as (

    {{ cdc_history_pending_ends(ref('cdc_history_versions')) }}

),

final as (

    select
        version_id, source_format, source_database, source_schema, source_table, pk, op, row,
        valid_from, valid_to, apply_order, next_apply_order, is_open, is_current,
        vendor_sequence, change_id, ingested_at, unknown_columns
    from closed_versions

    union all

    select
        version_id, source_format, source_database, source_schema, source_table, pk, op, row,
        valid_from,
        coalesce(pending_end.valid_to, valid_to) as valid_to,
        apply_order,
        coalesce(pending_end.next_apply_order, next_apply_order) as next_apply_order,
        is_open and pending_end is null as is_open,
        is_current and pending_end is null as is_current,
        vendor_sequence, change_id, ingested_at, unknown_columns
    from open_versions

)

select * from final
