{#
    The upkeep of the history's stored versions (gold.cdc_history_versions): its closers
    settled, its files compacted.

    Settling. An in-order increment appends its new versions and a closer per key it touches
    (models/gold/cdc_history_versions.sql); the version each closer ends keeps no end of its
    own until a settling MERGE writes the closer's into it and deletes the closer.
    gold.cdc_history ends such versions when read (cdc_history_pending_ends), at a cost that
    grows with the closers, so they are settled every `cdc_history_settle_every` appends (the
    var, 10 by default; 0: only when needed), and always before an increment that MERGEs (a
    late change, a truncate, a replay), whose recomputation reads the stored ends. A pre-hook,
    so that the increment's own write, the table's last commit, records its watermark.

    Compaction. Every increment adds a file to each partition it writes, and a MERGE (the
    settling's, a late change's) and every read of gold.cdc_history go through every file of
    the open partitions: a loader that builds every minute would pile up small files all day,
    each one slowing every MERGE and read after it. So every `cdc_history_compact_every` writes
    (the var, 100 by default), the build compacts the table after its write: one OPTIMIZE that
    packs the small files and drops the rows the MERGEs marked deleted.

    The writes are counted in the watermark each one records, not read from the table: a run
    adds itself to the count its last write recorded, from 0 again when an OPTIMIZE came after
    that write (cdc_last_commit passes over it, and says so).

    Not Delta's auto compaction (`delta.autoOptimize.autoCompact`): once it starts, it compacts
    the open partitions and silver again after every write, rewriting tens of MB each time and
    slowing every increment of a following loader.

    Silver's compaction, and what the two share, are in macros/utils/cdc_compaction.sql.
#}

{% macro cdc_history_compaction(recorded) -%}
    {#-
        At an increment of the history that MERGEs: {'writes': the MERGEs since the last
        compaction, this one included, recorded with the watermark; 'compact': whether this run
        compacts after its MERGE}. `recorded`: what the last write recorded with its watermark
        (cdc_watermark), with whether an OPTIMIZE came after it ('compacted').
    -#}
    {%- set every = cdc_compact_every('cdc_history_compact_every') -%}
    {%- set writes = cdc_writes_since_compaction(recorded) + 1 -%}
    {{ return({'writes': writes, 'compact': every > 0 and writes >= every}) }}
{%- endmacro %}

{% macro cdc_compact_history() -%}
    {#-
        Post-hook of gold.cdc_history_versions: the compaction cdc_history_compaction decided,
        after the write. One OPTIMIZE of the table, with the session's settings for it (put back
        after): the files under 16 MB, which each write adds, are packed into files of up to
        128 MB (cdc_optimize_files), and every file with more than 5% of its rows marked deleted
        (Delta's maxDeletedRowsRatio: the open partitions' files, where each MERGE leaves the
        versions it closed and the closers it deleted) is written again without them. A first
        build's files, already large, are otherwise left as they are. A VACUUM
        follows with cdc_vacuum_after_compaction. Run after cdc_write_progress: its commits
        change no row, and cdc_last_commit passes over them to the write the row describes.
    -#}
    {#- none outside execution, and when the model's compile handed nothing over -#}
    {%- set compaction = cdc_handed('history_compaction') -%}
    {%- if not compaction or not compaction.compact -%}
        {{ return('') }}
    {%- endif -%}
    {{ log(this ~ ': compacting its files after ' ~ compaction.writes ~ ' writes (cdc_history_compact_every)', info=true) }}
    {%- do cdc_optimize_files(this) -%}
    {{ return('') }}
{%- endmacro %}

{% macro cdc_history_settling(recorded, appends) -%}
    {#-
        At an increment of the history that writes: {'settle': whether a pre-hook settles the
        closers of the appends before it first (cdc_settle_history), 'before': how many appends
        they are, 'after': how many are unsettled after this run's write, recorded with the
        watermark}. `recorded`: what the last write recorded with its watermark
        (cdc_watermark); `appends`: whether this run appends (else it MERGEs, on settled
        versions only).
    -#}
    {%- set every = cdc_compact_every('cdc_history_settle_every', 10) -%}
    {%- set before = recorded.get('unsettled_appends', 0) | int -%}
    {%- set settle = before > 0 and (not appends or (every > 0 and before >= every)) -%}
    {{ return({
        'settle': settle,
        'before': before,
        'after': (0 if settle else before) + (1 if appends else 0),
    }) }}
{%- endmacro %}

{% macro cdc_settle_history() -%}
    {#-
        Pre-hook of gold.cdc_history_versions: the settling cdc_history_settling decided, before
        the write. One MERGE: every stored version a closer ends (cdc_history_pending_ends) gets
        that end and leaves the open partitions, and every closer is deleted. gold.cdc_history
        reads the same before and after. The model's write comes after it, and the row of
        meta.cdc_build_progress describes that write's version.
    -#}
    {%- set settling = cdc_handed('history_settling') -%}
    {%- if not settling or not settling.settle -%}
        {{ return('') }}
    {%- endif -%}
    {{ log(this ~ ': settling the closers of ' ~ settling.before ~ ' appends (cdc_history_settle_every)', info=true) }}
    {%- set settle -%}
        merge into {{ this }} as stored
        using (
            select version_id, pending_end.valid_to, pending_end.next_apply_order, false as is_closer
            from ({{ cdc_history_pending_ends(this) }}) as open_versions
            where pending_end is not null
            union all
            select version_id, valid_to, next_apply_order, true as is_closer
            from {{ this }}
            where is_open and is_closer
        ) as settled
        on stored.is_open and stored.version_id = settled.version_id
        when matched and settled.is_closer then delete
        when matched then update set
            valid_to = settled.valid_to,
            next_apply_order = settled.next_apply_order,
            is_open = false,
            is_current = false
    {%- endset -%}
    {%- do run_query(settle) -%}
    {{ return('') }}
{%- endmacro %}

{% macro cdc_history_pending_ends(versions) -%}
    {#-
        SQL: the stored versions of `versions` (gold.cdc_history_versions) in its open
        partitions, each with `pending_end`: struct(next_apply_order, valid_to) of the first
        closer of its key after it, null when none ends it (it is the key's open version).
        Each closer is an append's first new change of its key, and each version in the open
        partitions the last of its key in the write that stored it, so the first closer after
        a version is its key's next change. The closers, few, are gathered per key and
        broadcast: the open versions are read once, neither shuffled nor sorted.
    -#}
    select /*+ broadcast(pending) */
        open_versions.*,
        array_min(filter(
            pending.ends,
            closer -> closer.next_apply_order > open_versions.apply_order
        )) as pending_end
    from {{ versions }} as open_versions
    left join (
        select
            source_database, source_schema, source_table, pk,
            collect_list(struct(next_apply_order, valid_to)) as ends
        from {{ versions }}
        where is_open and is_closer
        group by source_database, source_schema, source_table, pk
    ) as pending
        on
            open_versions.source_database <=> pending.source_database
            and open_versions.source_schema <=> pending.source_schema
            and open_versions.source_table = pending.source_table
            and open_versions.pk = pending.pk
    where open_versions.is_open and not open_versions.is_closer
{%- endmacro %}

{% macro cdc_history_current_versions(versions) -%}
    {#-
        SQL: the current versions of `versions` (gold.cdc_history_versions): the open versions
        with a row that no closer has ended, as gold.cdc_history's is_current says. Read
        without the view: gold.cdc_current_state asks only for these, and through the view
        Spark would analyse its closed branch too.
    -#}
    {%- set key = ['source_database', 'source_schema', 'source_table', 'pk'] %}
    select *, 1 as copy_number from ({{ cdc_history_pending_ends(versions) }}) as open_versions
    where is_current and pending_end is null and not keyless

    union all

    {#- a table without a key is a multiset whose rows are their own keys: a row is there as
        many times as it was inserted (or updated into) less the times it was deleted (or
        updated away) since the last truncate of its table, in copies 1, 2, ... A change
        delivered again counts once (cdc_delivery) #}
    select
        keyless_rows.latest.*,
        cast(null as struct<next_apply_order: string, valid_to: timestamp>) as pending_end,
        copy_number
    from (
        select
            max_by(struct(version.*), version.apply_order) filter (where version.row is not null) as latest,
            sum(case when version.op in ('c', 'r', 'u') then 1 when version.op = 'd' then -1 else 0 end) as copies
        from (
            select * except (delivery)
            from (
                select
                    *,
                    row_number() over (
                        partition by {{ key | join(', ') }}, op, {{ cdc_delivery() }}
                        order by apply_order
                    ) as delivery
                from {{ versions }}
                where keyless and not is_closer
            ) as deliveries
            where delivery = 1
        ) as version
        left join (
            select {{ key | join(', ') }}, max(apply_order) as truncated_at
            from {{ versions }}
            where keyless and op = 't'
            group by {{ key | join(', ') }}
        ) as truncation
            on {% for k in key %}version.{{ k }} <=> truncation.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
        where truncation.truncated_at is null or version.apply_order > truncation.truncated_at
        group by {% for k in key %}version.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
        having copies > 0
    ) as keyless_rows
    lateral view explode(sequence(1, keyless_rows.copies)) copies as copy_number
{%- endmacro %}
