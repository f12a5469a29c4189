{#
    The stored versions behind gold.cdc_history (a view: models/gold/cdc_history.sql), one per
    change of a key, valid from its change to the key's next change in apply order. A delete
    (or a truncate, or the old key of a key-changing update) closes the key's interval with a
    version whose row is null; a truncate also ends a change older than it that arrives after
    it (late), whatever run consumed either.

    An increment whose every change comes after its key's stored versions (the usual one:
    open_only below) appends: its new versions, windowed among themselves, and one closer per
    key it touches (the key's first new change: its order and event time). It reads nothing
    stored and rewrites nothing. The key's version that was open before stays in the open
    partition as it was written, and gold.cdc_history ends it at the first closer after it
    (cdc_history_pending_ends). Every cdc_history_settle_every appends, and before any other
    increment, a pre-hook settles them: one MERGE writes those ends into the versions and
    deletes the closers (macros/gold/cdc_history_upkeep.sql). A late change, a truncate or a
    replay then takes the full path on settled versions: for every key the new changes touch,
    the stored versions from its first new change on and the one just before are recomputed,
    and only those whose end moved are MERGEd (with the new ones).

    In-order increments append rather than MERGE because a MERGE rewrites every touched file of
    the open partition, and each of those files holds every key.
#}

{#-
    An existing version only ever gets a new end (a later change of its key arrived, or a late
    one slotted in before it): the MERGE updates just valid_to, next_apply_order, is_open and
    is_current, so the versions already stored are read without their row images
    (known_versions), and only those of the keys the new changes touch are recomputed.

    Partitioned by is_open (the key's latest version, live or not, as written: a closer after
    it may have ended it since), is_current and is_closer.

    Whether a change is newer than its key's open version is decided at compile time: without
    reading anything stored when every table's oldest new change is newer than the newest
    order stored of the table (recorded with the watermark: stored_orders), else by a query over
    the open partition for an increment of at most broadcast_limit changes (a larger one takes
    the full path unchecked). A copy of the open version itself (a replay) takes the full path,
    whose window drops it.

    Each write adds a file to every partition it writes: every cdc_history_compact_every writes
    a post-hook compacts the table (macros/gold/cdc_history_upkeep.sql).
-#}
{%- set history_columns = [
    'source_format', 'source_database', 'source_schema', 'source_table', 'pk', 'op', 'row', 'has_row',
    'event_time', 'vendor_sequence', 'apply_order', 'change_id', 'ingested_at', 'is_stored',
    'stored_next_apply_order', 'stored_version_id', 'keyless', 'unknown_columns',
] %}

{%- set recorded = {} %}
{%- set watermark = cdc_watermark('ingested_at', recorded=recorded) if is_incremental() else none %}
{%- if watermark is not none %}{{ cdc_require_columns(this, ['is_closer', 'keyless', 'unknown_columns']) }}{% endif %}
{#- silver's newest commit, before anything reads silver: the write records it, and while it
    is still the newest one, silver has had no write since and there is nothing new, which no
    query needs to count #}
{%- set silver_commit = cdc_last_commit(ref('cdc_parsed')) %}
{%- set unchanged = cdc_unchanged_since(recorded, silver_commit) %}
{#- an increment of at most this many changes has its keys broadcast (late check and model) #}
{%- set broadcast_limit = 250000 %}
{%- set open_versions = '(select source_database, source_schema, source_table, pk, apply_order, vendor_sequence from ' ~ this ~ ' where is_open and not is_closer)' %}
{#- the newest apply order stored per source table, which the last write recorded (read once
    from the open versions when it did not say: a first build's, or an earlier version's; none
    when it said none, over the bound below): an increment no older than it needs no late check #}
{%- set stored_orders = recorded.get('orders') if watermark is not none else none %}
{%- if watermark is not none and 'orders' not in recorded and not unchanged %}
    {%- set stored_orders = cdc_stored_orders(open_versions) %}
{%- endif %}
{%- if unchanged %}
    {%- set increment = {'changes': 0, 'truncations': 0, 'up_to': watermark, 'late': 0, 'orders': {}} %}
{%- else %}
    {%- set increment = cdc_new_change_counts(ref('cdc_changes'), watermark, open_versions, broadcast_limit, stored_orders) %}
{%- endif %}
{#- a first build reads the changes up to the newest one there now, and knows whether any is a
    truncate (read at compile time) #}
{%- set first_build = cdc_change_counts(ref('cdc_changes')) if not is_incremental() else none %}
{%- set counted = increment if increment is not none else first_build %}
{#- the write's commit (the MERGE's, or the first build's create) records what it consumed:
    the next run reads it, not max(ingested_at) over every stored version #}
{#- and how many truncates the runs up to it consumed: while none has, the increments skip the
    scan of silver for them (earlier_truncations), whose cost grows with the history. A table
    whose last commit does not say counts them once, and records the count from then on #}
{%- set truncations_before = recorded.get('truncations') if watermark is not none else 0 %}
{%- if truncations_before is none %}
    {%- set truncations_before = cdc_truncation_count(ref('cdc_changes'), watermark) %}
{%- endif %}
{%- set extra = {'truncations': truncations_before + counted.truncations, 'upstream': silver_commit.id} if counted is not none else none %}
{#- the newest apply order per table, stored or new. A first build does not count its changes'
    orders per table (cdc_change_counts: a sort of every change): its record leaves them out,
    and the first increment reads them from the open versions. Beyond 5,000 tables the record
    would weigh on every commit: it says none, and the increments take the late check's query
    instead (reading the orders from the open versions at every run too would be that query's
    scan twice). Without the stored orders (none recorded) the map holds the new changes' only,
    and is not recorded either #}
{%- if counted is not none and counted.orders is mapping %}
    {%- set orders = {} %}
    {%- do orders.update(stored_orders or {}) %}
    {%- for table_key, span in counted.orders.items() %}
        {%- if span[1] is not none and (orders.get(table_key) is none or span[1] > orders[table_key]) %}
            {%- do orders.update({table_key: span[1]}) %}
        {%- endif %}
    {%- endfor %}
    {%- do extra.update({'orders': orders if stored_orders is mapping and orders | length <= 5000 else none}) %}
{%- endif %}
{#- every new change comes after its key's open version: only open versions can get an end,
    at the key's first new change, and the increment appends (closers, below) #}
{%- set open_only = increment is not none and increment.truncations == 0 and increment.late == 0 %}
{#- an increment with new changes writes (one with none writes nothing); counted is then the
    increment, so extra is set #}
{%- set writes = increment is not none and increment.changes > 0 %}
{#- the writes since the table was last compacted, this one included, recorded with the
    watermark; every cdc_history_compact_every of them, a post-hook compacts the table after
    the write (macros/gold/cdc_history_upkeep.sql). And the appends whose closers are not
    settled yet: before a MERGE, or once there are cdc_history_settle_every of them, a
    pre-hook settles them first #}
{%- set settling = cdc_history_settling(recorded, open_only) if writes else none %}
{%- if writes %}
    {%- set compaction = cdc_history_compaction(recorded) %}
    {%- do extra.update({'writes_since_compaction': compaction.writes, 'unsettled_appends': settling.after}) %}
    {%- do cdc_hand_over('history_compaction', compaction) %}
    {%- do cdc_hand_over('history_settling', settling) %}
{%- endif %}
{%- do cdc_record_watermark(counted.up_to if counted is not none else none, extra) %}
{#- a MERGE (the settling's, or an increment's that does not append) joins its source to the
    open partition by hash, not by sorting every open version (macros/utils/cdc_merge_joins.sql); put
    back by a post-hook #}
{%- if writes and (settling.settle or not open_only) %}
    {%- do cdc_merge_by_hash_join() %}
{%- endif %}
{#- no truncate among the changes read: truncated_keys is empty at compile time, and the scan
    of every stored version it would join (seen_keys) is dropped #}
{%- set truncating = counted is none or counted.truncations > 0 %}
{#- no change holds a value Debezium could not send: nothing to complete, nothing of the stored
    versions to read for it (cdc_history_complete_unavailable) #}
{%- set completing = counted is none or counted.get('unavailable', 1) > 0 %}
{#- a small increment's keys are broadcast to the scan of the stored versions, which then need
    no shuffle (every stored version would cross it to meet a few thousand keys) #}
{%- set broadcast_keys = increment is not none and increment.changes <= broadcast_limit %}

{%- if increment is not none and increment.changes == 0 %}
    {%- do cdc_log_plan('no new change in silver: nothing written') %}
{%- elif first_build is not none %}
    {%- do cdc_log_plan('first build: every change' ~ (' up to ' ~ first_build.up_to if first_build.up_to else '')) %}
{%- elif increment is none %}
    {%- do cdc_log_plan('no watermark recorded: every change newer than the stored versions, MERGE') %}
{%- else %}
    {%- set reasons = [] %}
    {%- if increment.truncations %}{% do reasons.append(increment.truncations ~ ' truncate(s) end the keys live before them') %}{% endif %}
    {%- if increment.late is none %}{% do reasons.append('too many changes to check each key for a late one') %}
    {%- elif increment.late > 0 %}{% do reasons.append(increment.late ~ ' key(s) get a late or replayed change') %}{% endif %}
    {%- do cdc_log_plan(
        increment.changes ~ ' new changes ingested after ' ~ watermark ~ ' up to ' ~ increment.up_to ~ ': '
        ~ ("append, each change newer than its key's open version" if open_only else 'MERGE, ' ~ (reasons | join('; ')))
        ~ ('; the closers of earlier appends are settled first' if settling is not none and settling.settle else '')
    ) %}
{%- endif %}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='version_id',
    merge_update_columns=['valid_to', 'next_apply_order', 'is_open', 'is_current'],
    partition_by=['is_open', 'is_current', 'is_closer'],
    tblproperties={
        'delta.enableDeletionVectors': 'true',
        'delta.dataSkippingStatsColumns':
            'source_database,source_schema,source_table,pk,apply_order,valid_from,valid_to,ingested_at',
    },
    pre_hook=["{{ cdc_settle_history() }}"],
    post_hook=["{{ cdc_write_progress() }}", "{{ cdc_forget_merge_hash_join() }}", "{{ cdc_compact_history() }}"],
) }}
{#- Statistics only on the columns readers filter by (a table, a key, a time, the watermark's
    ingested_at): those of the row image, the version id and the change id would only cost
    time at every write. #}

{% if increment is not none and increment.changes == 0 -%}
{#- nothing new: no MERGE runs (cdc_nothing_to_write), and its source, empty, is the table's
    own columns: Spark analyses this for the MERGE's temporary view, which is cheaper than
    analysing the query below #}
select * from {{ this }}
where false
{{ cdc_nothing_to_write() }}
{%- else -%}
with new_changes as (

    select * from {{ ref('cdc_changes') }}
    {%- if is_incremental() %}
    where {{ cdc_newer_than('ingested_at', watermark) }}
    {%- if increment is not none %}
        and ingested_at <= timestamp '{{ increment.up_to }}'
    {%- endif %}
    {%- elif first_build is not none and first_build.up_to is not none %}
    where ingested_at <= timestamp '{{ first_build.up_to }}'
    {%- endif %}

),

new_effects_as_sent as (

    {#- a change's effect on its key; a key-changing update also ends its old key there (a
        'd' of before_pk). One scan of silver for both: an increment's history MERGE plans,
        filters files for and reads each scan of silver on its own. A table without a key is
        a multiset whose rows are their own keys: an update that leaves its row as it was
        changes nothing there, and gold counts the copies (cdc_history_current_versions) #}
    select
        new_changes.source_format, new_changes.source_database, new_changes.source_schema,
        new_changes.source_table, effects.effect.pk, effects.effect.op,
        case when effects.effect.op <> 'd' then new_changes.after_image end as row,
        effects.effect.op <> 'd' and new_changes.after_image is not null as has_row,
        new_changes.event_time, new_changes.vendor_sequence, new_changes.apply_order,
        new_changes.change_id, new_changes.ingested_at,
        false as is_stored, cast(null as string) as stored_next_apply_order,
        cast(null as string) as stored_version_id,
        not coalesce(size(new_changes.key_columns) > 0, false) as keyless,
        case when effects.effect.op <> 'd' then new_changes.unavailable_columns end as unavailable_columns
    from new_changes
    lateral view explode(
        case
            when new_changes.op = 'u' and not coalesce(size(new_changes.key_columns) > 0, false)
                and new_changes.before_pk is null and new_changes.before_image is not null
                then cast(array() as array<struct<pk: string, op: string>>)
            when new_changes.op = 'u' and new_changes.before_pk is not null
                then array(
                    named_struct('pk', new_changes.pk, 'op', new_changes.op),
                    named_struct('pk', new_changes.before_pk, 'op', 'd')
                )
            else array(named_struct('pk', new_changes.pk, 'op', new_changes.op))
        end
    ) effects as effect
    where new_changes.op in ('c', 'u', 'r', 'd')

),

{{ cdc_history_complete_unavailable('new_effects_as_sent', this if is_incremental() else none, completing) }}

truncations as (

    select source_format, source_database, source_schema, source_table, event_time, vendor_sequence, apply_order, change_id, ingested_at
    from new_changes
    where op = 't'
    {%- if not truncating %}
        and false
    {%- endif %}

),

earlier_truncations as (

    {#- the truncates earlier runs consumed: each ended the keys its table had then, and ends
        too any new change of its table older than it (one delivered late, of a key the
        truncate never saw). Read at an increment with new changes once a run has consumed a
        truncate (truncations_before): a filter on silver's op column, over every change #}
    select source_format, source_database, source_schema, source_table, event_time, vendor_sequence, apply_order, change_id, ingested_at
    from {{ ref('cdc_changes') }}
    where op = 't'
    {%- if watermark is not none and truncations_before != 0 %}
        and ingested_at <= timestamp '{{ watermark }}'
    {%- else %}
        and false
    {%- endif %}

),

new_keys as (

    {#- each key the new changes touch, with its first new change (copies of one change carry
        one event time) #}
    select
        source_database, source_schema, source_table, pk,
        min(apply_order) as first_new_order,
        min_by(event_time, apply_order) as first_new_event_time,
        bool_or(keyless) as keyless
    from new_effects
    group by source_database, source_schema, source_table, pk

),

late_truncated_keys as (

    {#- a truncate already consumed ends the new changes of its table that are older than it
        (truncates are few: broadcast, the new keys are not shuffled to meet them) #}
    select /*+ broadcast(truncations) */
        truncations.source_format, truncations.source_database, truncations.source_schema,
        truncations.source_table, new_keys.pk, 't' as op, null as row, false as has_row, truncations.event_time,
        truncations.vendor_sequence, truncations.apply_order, truncations.change_id, truncations.ingested_at,
        false as is_stored, cast(null as string) as stored_next_apply_order,
        cast(null as string) as stored_version_id, new_keys.keyless,
        cast(array() as array<string>) as unknown_columns
    from earlier_truncations as truncations
    inner join new_keys
        on
            truncations.source_database <=> new_keys.source_database
            and truncations.source_schema <=> new_keys.source_schema
            and truncations.source_table = new_keys.source_table
            and truncations.apply_order > new_keys.first_new_order

),
{%- if open_only %}

versions as (

    {#- every new change comes after its key's open version: the stored versions are not read
        at all. The open versions they end are closed by key in the MERGE (closers, below) #}
    select * from new_effects
    union all
    select * from late_truncated_keys

),
{%- else %}

known_versions as (

    {%- if is_incremental() %}
    {#- narrow: the MERGE keeps every stored column but the three it updates, so the row
        images (most of the table's bytes) are not read at all. has_row only decides
        is_current, and a stored version is written again only when a later change ended it:
        then it is not current whatever its row #}
    select
        source_format, source_database, source_schema, source_table, pk, op,
        cast(null as string) as row, false as has_row,
        valid_from as event_time, vendor_sequence, apply_order, change_id, ingested_at,
        true as is_stored, next_apply_order as stored_next_apply_order,
        version_id as stored_version_id, keyless, unknown_columns
    from {{ this }}
    {#- the pre-hook has settled every closer (cdc_settle_history): none is left #}
    where not is_closer
    {%- else %}
    select * from new_effects
    where false
    {%- endif %}

),

seen_keys as (

    select source_database, source_schema, source_table, pk, apply_order, keyless from new_effects
    union all
    select source_database, source_schema, source_table, pk, apply_order, keyless from known_versions

),

truncated_keys as (

    {#- a truncate ends every key of its table that is live before it #}
    select
        truncations.source_format, truncations.source_database, truncations.source_schema,
        truncations.source_table, live.pk, 't' as op, null as row, false as has_row, truncations.event_time,
        truncations.vendor_sequence, truncations.apply_order, truncations.change_id, truncations.ingested_at,
        false as is_stored, cast(null as string) as stored_next_apply_order,
        cast(null as string) as stored_version_id, live.keyless,
        cast(array() as array<string>) as unknown_columns
    from truncations
    inner join seen_keys as live
        on
            truncations.source_database <=> live.source_database
            and truncations.source_schema <=> live.source_schema
            and truncations.source_table = live.source_table
            and truncations.apply_order > live.apply_order

    union all

    select * from late_truncated_keys

),

affected_keys as (

    select
        source_database, source_schema, source_table, pk,
        min(apply_order) as first_new_order
    from (
        select source_database, source_schema, source_table, pk, apply_order from new_effects
        union all
        select source_database, source_schema, source_table, pk, apply_order from truncated_keys
    ) as touched
    group by source_database, source_schema, source_table, pk

),

known_of_affected as (

    select {% if broadcast_keys %}/*+ broadcast(affected_keys) */ {% endif %}
        known_versions.*,
        affected_keys.first_new_order
    from known_versions
    inner join affected_keys
        on
            known_versions.source_database <=> affected_keys.source_database
            and known_versions.source_schema <=> affected_keys.source_schema
            and known_versions.source_table = affected_keys.source_table
            and known_versions.pk = affected_keys.pk

),

versions_without_stored_rows as (

    select * from new_effects
    union all
    select * from truncated_keys
    union all
    {#- stored versions from the first new change of their key on: their ends may move #}
    select {{ history_columns | join(', ') }}
    from known_of_affected
    where apply_order >= first_new_order
    union all
    {#- and the one version just before it, which the first new change ends; versions before
        that keep their ends, however many a hot key has #}
    select last_before.*
    from (
        select max_by(struct({{ history_columns | join(', ') }}), apply_order) as last_before
        from known_of_affected
        where apply_order < first_new_order
        group by source_database, source_schema, source_table, pk
    ) as predecessors

),

repeated_stored_rows as (

    {#- the row images of the stored versions that a new change may repeat (same key, vendor
        position and op: a connector restarted after a crash replays from its stored offset),
        for the comparison in `redelivered`. Usually none, and then no row image is read #}
    {%- if is_incremental() %}
    select /*+ broadcast(repeated) */ stored.version_id, stored.row
    from {{ this }} as stored
    left semi join (
        select known.stored_version_id
        from known_of_affected as known
        inner join new_effects
            on
                known.source_database <=> new_effects.source_database
                and known.source_schema <=> new_effects.source_schema
                and known.source_table = new_effects.source_table
                and known.pk = new_effects.pk
                and known.vendor_sequence = new_effects.vendor_sequence
                and known.op = new_effects.op
        where known.op <> 'r'
    ) as repeated
        on stored.version_id = repeated.stored_version_id
    {%- else %}
    select cast(null as string) as version_id, cast(null as string) as row
    where false
    {%- endif %}

),

versions as (

    select
        {%- for c in history_columns %}
        {%- if c == 'row' %}
        coalesce(versions.row, repeated.row) as row{{ ',' if not loop.last }}
        {%- else %}
        versions.{{ c }}{{ ',' if not loop.last }}
        {%- endif %}
        {%- endfor %}
    from versions_without_stored_rows as versions
    left join repeated_stored_rows as repeated
        on versions.stored_version_id = repeated.version_id

),
{%- endif %}

versions_by_key as (

    {#- one shuffle by key: the window below is partitioned by the key and sorted by apply
        order within it. key_hash leads the window's partitioning, so the sort before it
        compares a 64-bit prefix that differs between keys. Led by the key's strings (one
        database, then a table, then pk texts that all begin alike), the prefix told almost no
        two rows apart, and each comparison went on to the strings. The groups and the order
        are the same either way #}
    select
        *,
        xxhash64(source_database, source_schema, source_table, pk) as key_hash
    from versions
    distribute by source_database, source_schema, source_table, pk

),

{#- one key's changes in apply order, its copies of one change together with the first
    delivered last (used by redelivered and intervals; Spark sorts once for both) #}
{%- set key_order -%}
    partition by key_hash, source_database, source_schema, source_table, pk
    order by apply_order asc, ingested_at desc, is_stored asc
{%- endset %}

redelivered as (

    {#- a change delivered again at another Kafka offset is no version of its own
        (cdc_redelivery); a stored version stays. Copies at one apply order are left to the
        window below #}
    select * except (is_redelivery)
    from (
        select
            *,
            not is_stored and {{ cdc_redelivery('key_order') }} as is_redelivery
        from versions_by_key
        window key_order as ({{ key_order }})
    ) as ordered
    where not is_redelivery

),

intervals as (

    {#- each version ends at its key's next one. A change delivered twice is one version: its
        copies (one apply order) sort together, the first delivered last (ingested_at
        descending; a stored copy after a new one of the same ingestion), so the copy kept is
        the one whose next row is another apply order, and that row's event time ends it (the
        copies of one change carry one event time). One window pass, not a row_number to drop
        the copies and then a lead, which would sort the rows twice for the same result #}
    select *
    from (
        select
            *,
            lead(event_time) over key_order as valid_to,
            lead(apply_order) over key_order as next_apply_order
        from redelivered
        window key_order as ({{ key_order }})
    ) as ordered
    where not next_apply_order <=> apply_order

),

final as (

    select
        {#- a stored version keeps the id it was written with: the MERGE matches it by that id,
            and histories written before the ids were md5s (sha256s of the same string, 64
            characters) go on without a rebuild #}
        coalesce(stored_version_id, md5(concat_ws(
            '|',
            coalesce(source_database, ''),
            coalesce(source_schema, ''),
            source_table,
            pk,
            apply_order
        ))) as version_id,
        source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        op,
        row,
        event_time as valid_from,
        valid_to,
        apply_order,
        next_apply_order,
        next_apply_order is null as is_open,
        next_apply_order is null and has_row as is_current,
        false as is_closer,
        vendor_sequence,
        change_id,
        ingested_at,
        keyless,
        unknown_columns
    from intervals
    {#- a stored version is written again only when its end moved #}
    where not is_stored or not next_apply_order <=> stored_next_apply_order

)
{%- if open_only %},

closers as (

    {#- the version of each key the new changes touch that was open before them ends at the
        key's first new change (a late truncate's version of a key comes after it): appended
        as a closer, in the open partition's partition of closers, which gold.cdc_history
        reads to end it and the settling MERGE writes into it (cdc_history_pending_ends). A
        new key's closer ends nothing. Its id tells it from a version's: a key's first new
        change is newer than everything stored of the key, so no two closers share one #}
    select
        md5(concat_ws(
            '|',
            'closer',
            coalesce(source_database, ''),
            coalesce(source_schema, ''),
            source_table,
            pk,
            first_new_order
        )) as version_id,
        cast(null as string) as source_format,
        source_database,
        source_schema,
        source_table,
        pk,
        cast(null as string) as op,
        cast(null as string) as row,
        cast(null as timestamp) as valid_from,
        first_new_event_time as valid_to,
        cast(null as string) as apply_order,
        first_new_order as next_apply_order,
        true as is_open,
        false as is_current,
        true as is_closer,
        cast(null as string) as vendor_sequence,
        cast(null as string) as change_id,
        cast(null as timestamp) as ingested_at,
        keyless,
        cast(array() as array<string>) as unknown_columns
    from new_keys

)

select * from final
union all
select * from closers
{{ cdc_append() }}
{%- else %}

select * from final
{%- endif %}
{%- endif %}
