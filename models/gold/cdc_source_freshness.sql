{#-
    One row per source table: when it last changed, when its source last sent a heartbeat,
    and how far behind the lakehouse is. Checked by the cdc_fresh_within test, whose warn /
    error thresholds come from the vars cdc_freshness_warn_after_hours and
    cdc_freshness_error_after_hours.
-#}

with key_state as (

    select * from {{ ref('cdc_key_state') }}

),

control_events as (

    select * from {{ ref('cdc_control_events') }}

),

table_changes as (

    select
        source_format,
        source_database,
        source_schema,
        source_table,
        max(last_event_time) as last_change_time,
        max(ingested_at) as last_ingested_at
    from key_state
    group by source_format, source_database, source_schema, source_table

),

heartbeats as (

    {#- heartbeats name a source (format, database), rarely a table #}
    select
        source_format,
        source_database,
        max(event_time) as last_heartbeat_time
    from control_events
    where control_kind = 'heartbeat'
    group by source_format, source_database

),

final as (

    select
        table_changes.source_format,
        table_changes.source_database,
        table_changes.source_schema,
        table_changes.source_table,
        table_changes.last_change_time,
        heartbeats.last_heartbeat_time,
        greatest(table_changes.last_change_time, heartbeats.last_heartbeat_time) as last_seen_time,
        table_changes.last_ingested_at,
        (
            unix_timestamp(current_timestamp())
            - unix_timestamp(greatest(table_changes.last_change_time, heartbeats.last_heartbeat_time))
        ) as lag_seconds
    from table_changes
    left join heartbeats
        on
            table_changes.source_format = heartbeats.source_format
            and table_changes.source_database <=> heartbeats.source_database

)

select * from final
