{#
    The state of every (source table, key) ever seen, deleted ones included: a deleted key keeps
    a tombstone row so that a late, older change cannot bring it back. Incremental MERGE on the
    keys the new changes touch; a key's row is replaced only by a change later in its apply
    order (merge_update_condition), so arrival order and duplicates do not matter.
#}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='state_key',
    merge_update_condition='DBT_INTERNAL_SOURCE.apply_order > DBT_INTERNAL_DEST.apply_order',
    tblproperties={'delta.enableDeletionVectors': 'true'},
    post_hook="{{ cdc_forget_watermark() }}",
) }}

{%- set truncate_marker = "'<truncate>'" %}
{%- set watermark = cdc_watermark('ingested_at') if is_incremental() else none %}
{#- no truncate among the new changes: the branch that ends the keys a truncate finds is empty
    at compile time, so the stored keys are not scanned for it #}
{%- set increment = cdc_new_change_counts(ref('cdc_changes'), watermark) %}
{#- the MERGE's commit records what it consumed: the next run reads it, not max(ingested_at) #}
{%- if increment is not none %}{% do cdc_record_watermark(increment.up_to) %}{% endif %}
{%- set truncating = increment is none or increment.truncations > 0 %}

with new_changes as (

    select * from {{ ref('cdc_changes') }}
    {%- if is_incremental() %}
    where {{ cdc_newer_than('ingested_at', watermark) }}
    {%- if increment is not none %}
        and ingested_at <= timestamp '{{ increment.up_to }}'
    {%- endif %}
    {%- endif %}

),

row_effects as (

    {#- each change's effect on its own key #}
    select
        source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        op as last_op,
        op = 'd' as is_deleted,
        case when op <> 'd' then after_image end as row,
        event_time,
        vendor_sequence,
        apply_order,
        change_id,
        ingested_at
    from new_changes
    where op in ('c', 'u', 'r', 'd')

    union all

    {#- an update that changes the key removes the old key #}
    select
        source_format,
        source_database,
        source_schema,
        source_table,
        before_pk as pk,
        'd' as last_op,
        true as is_deleted,
        null as row,
        event_time,
        vendor_sequence,
        apply_order,
        change_id,
        ingested_at
    from new_changes
    where op = 'u' and before_pk is not null

),

truncations as (

    select * from new_changes
    where op = 't'
    {%- if not truncating %}
        and false
    {%- endif %}

),

known_keys as (

    select source_database, source_schema, source_table, pk, apply_order from row_effects
    {%- if is_incremental() and truncating %}
    union all
    select source_database, source_schema, source_table, pk, apply_order from {{ this }}
    where not is_deleted
    {%- endif %}

),

truncate_effects as (

    {#- a truncate deletes every key of its table that is older than it ... #}
    select
        truncations.source_format,
        truncations.source_database,
        truncations.source_schema,
        truncations.source_table,
        known_keys.pk,
        't' as last_op,
        true as is_deleted,
        null as row,
        truncations.event_time,
        truncations.vendor_sequence,
        truncations.apply_order,
        truncations.change_id,
        truncations.ingested_at
    from truncations
    inner join known_keys
        on
            truncations.source_database <=> known_keys.source_database
            and truncations.source_schema <=> known_keys.source_schema
            and truncations.source_table = known_keys.source_table
            and truncations.apply_order > known_keys.apply_order

    union all

    {#- ... and leaves a marker row that keeps older changes arriving later out #}
    select
        source_format,
        source_database,
        source_schema,
        source_table,
        {{ truncate_marker }} as pk,
        't' as last_op,
        true as is_deleted,
        null as row,
        event_time,
        vendor_sequence,
        apply_order,
        change_id,
        ingested_at
    from truncations

),

truncation_watermarks as (

    select
        source_database,
        source_schema,
        source_table,
        max(apply_order) as truncated_at
    from (
        select source_database, source_schema, source_table, apply_order from truncations
        {%- if is_incremental() %}
        union all
        select source_database, source_schema, source_table, apply_order from {{ this }}
        where pk = {{ truncate_marker }}
        {%- endif %}
    ) as truncation_points
    group by source_database, source_schema, source_table

),

surviving_effects as (

    select effects.*
    from (
        select * from row_effects
        union all
        select * from truncate_effects
    ) as effects
    left join truncation_watermarks
        on
            effects.source_database <=> truncation_watermarks.source_database
            and effects.source_schema <=> truncation_watermarks.source_schema
            and effects.source_table = truncation_watermarks.source_table
    where
        truncation_watermarks.truncated_at is null
        or effects.apply_order >= truncation_watermarks.truncated_at

),

ranked_effects as (

    select
        *,
        row_number() over (
            partition by source_database, source_schema, source_table, pk
            order by apply_order desc, is_deleted desc
        ) as effect_rank
    from surviving_effects

),

latest_effects as (

    select * from ranked_effects
    where effect_rank = 1

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
        last_op,
        is_deleted,
        event_time as last_event_time,
        vendor_sequence,
        apply_order,
        change_id,
        ingested_at,
        current_timestamp() as updated_at
    from latest_effects

)

select * from final
{%- if increment is not none and increment.changes == 0 %}
{#- nothing new: the MERGE gets an empty source (Spark drops every scan above) #}
where false
{%- endif %}
