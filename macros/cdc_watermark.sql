{% macro cdc_watermark(column='ingested_at', order_column='apply_order', recorded=none) -%}
    {#-
        The newest `column` already in this incremental model's table, read at compile time
        (a string; none when the table is empty, and outside execution: parsing, docs, lint).
        The model filters its upstream by it as a literal (cdc_newer_than): Delta skips every
        file whose statistics say it holds nothing newer, which it cannot do with a scalar
        subquery in the filter.

        Read from meta.cdc_build_progress, the row the model's post-hook wrote for the
        table's newest version (cdc_record_watermark, macros/cdc_build_progress.sql): one
        small table instead of a scan of the column, whose cost grows with the table (the
        MERGEs leave deletion vectors, so Delta cannot answer max() from file statistics); an
        OPTIMIZE or a VACUUM after that write changes nothing of it. A newest version that no
        row describes (a user's DELETE, a build stopped between the write and its row) falls
        back to the scan.

        Either way it checks that the table's apply orders (`order_column`) are in the layout
        this version writes (cdc_apply_order_layout): orders of two layouts do not compare, so
        a table an earlier version wrote stops the run, saying how to rebuild it.

        `recorded`, a mapping, receives what else the row recorded with the watermark
        (cdc_record_watermark's `extra`), and stays empty when the watermark was scanned. Its
        'rows_commit' and 'compacted' are the last commit's (cdc_last_commit).
    -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set commit = cdc_last_commit(this) -%}
    {%- set mark = commit.mark -%}
    {#- the post-hook writes no row when the run leaves this version with this mark -#}
    {%- do cdc_hand_over('progress_before', {'rows_commit': commit.rows_commit, 'mark': mark}) -%}
    {%- if mark is not none -%}
        {%- if mark.get('apply_order_layout') != cdc_apply_order_layout() -%}
            {{ _cdc_earlier_layout() }}
        {%- endif -%}
        {%- if recorded is mapping -%}
            {%- do recorded.update(mark) -%}
            {%- do recorded.update({'rows_commit': commit.rows_commit, 'compacted': commit.compacted}) -%}
        {%- endif -%}
        {{ return(mark['ingested_at']) }}
    {%- endif -%}
    {%- set newest = run_query(
        'select cast(max(' ~ column ~ ') as string) as newest, (select ' ~ order_column ~ ' from ' ~ this
        ~ ' where ' ~ order_column ~ ' is not null limit 1) as an_order from ' ~ this
    ).rows[0] -%}
    {%- if cdc_is_padded_apply_order(newest['an_order']) -%}
        {{ _cdc_earlier_layout() }}
    {%- endif -%}
    {{ return(newest['newest']) }}
{%- endmacro %}

{% macro cdc_last_commit(relation, written=false, recent=1, marked=true) -%}
    {#-
        The newest commit of the Delta table `relation`, read at compile time from its log
        (cdc_newest_commits: one small file, not the table): {
            'id': {'table', 'version', 'committed_at'}: which commit it is. A model records the
                id of the table it read with its watermark (cdc_record_watermark's extra
                'upstream'); while that table's newest commit is still the same one, nothing
                was written to it since, and the model's next run has nothing new to read. The
                commit's time with its version, as a table dropped and created again counts its
                versions from 0 again;
            'operation': the commit's Delta operation;
            'mark': what the model recorded for the version that last wrote the table's rows
                (its row of meta.cdc_build_progress: cdc_recorded_progress), else none; not
                looked up with `marked` false (bronze, which no model writes),
            'rows_commit': the id of the commit that last wrote the table's rows (read by
                gold.cdc_table_columns' next run and by the typed columns' key),
            'compacted': whether an OPTIMIZE came after the table's last write (below),
            'recent': the log's rows of the newest `recent` commits, newest first (a caller
                that reads the commits before the newest asks for them here: `describe
                history` takes as long with limit 8 as with limit 1),
        }
        All none when the table does not exist (a compile before any build) or has no
        commit, and outside execution.

        Commits that change no row (an OPTIMIZE, the history's compaction or a user's, a
        VACUUM: cdc_rowless_maintenance) are passed over: the mark and the rows are those of
        the write before them, which are still the table's (at most 8 commits back; beyond,
        no mark). The id stays the newest commit's: a table compacted
        since a model recorded it is not unchanged to that model, whose next run then asks
        what is new, and finds nothing.

        Read once per invocation for a table other than the running model's own: a model reads
        the commits of tables upstream of it, whose nodes have finished (their commit is the
        one this invocation leaves), so the history and the table columns take silver's from
        the memo (cdc_remember_commit), not from another `describe history` (a Spark job each).
        A model's own table is always read: its own write may have moved it.

        `written`: the running model wrote the table in this run, so it exists, though dbt's
        cache learns of a table the run created only when the node ends (a first build's
        post-hook).
    -#}
    {%- set none_known = {'id': none, 'operation': none, 'mark': none, 'rows_commit': none, 'compacted': false} -%}
    {%- if not execute or not written and adapter.get_relation(relation.database, relation.schema, relation.identifier) is none -%}
        {{ return(none_known) }}
    {%- endif -%}
    {%- set own = this is defined and (this | string) == (relation | string) -%}
    {%- set remembered = none if own else cdc_invocation_memo('commits').get(relation | string) -%}
    {%- if remembered is not none -%}
        {{ return(remembered) }}
    {%- endif -%}
    {%- set rows = cdc_newest_commits(relation, [recent, 1] | max) -%}
    {%- if not rows -%}
        {{ return(none_known) }}
    {%- endif -%}
    {%- set commit = {
        'id': cdc_commit_id(relation, rows[0]),
        'operation': rows[0]['operation'],
        'mark': none,
        'compacted': false,
        'recent': rows,
    } -%}
    {#- the write behind any maintenance commits: an OPTIMIZE (the history's compaction, or a
        user's) changes no row, and the watermark its write recorded still holds -#}
    {%- set written = {'row': rows[0]} -%}
    {%- if rows[0]['operation'] in cdc_rowless_maintenance() -%}
        {%- do written.update({'row': none}) -%}
        {%- for row in (rows if rows | length >= 8 else cdc_newest_commits(relation, 8)) -%}
            {%- if written.row is none and row['operation'] not in cdc_rowless_maintenance() -%}
                {%- do written.update({'row': row}) -%}
            {%- elif written.row is none and row['operation'] in ('OPTIMIZE', 'REORG') -%}
                {%- do commit.update({'compacted': true}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set row = written.row if written.row is not none else rows[0] -%}
    {%- do commit.update({'rows_commit': cdc_commit_id(relation, row)}) -%}
    {%- if marked and written.row is not none -%}
        {%- set mark = cdc_recorded_progress(commit.rows_commit) -%}
        {%- if mark is mapping and mark.get('table') == (relation | string) and mark.get('ingested_at') -%}
            {%- do commit.update({'mark': mark}) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if not own -%}
        {%- do cdc_remember_commit(relation, commit) -%}
    {%- endif -%}
    {{ return(commit) }}
{%- endmacro %}

{% macro cdc_newest_commits(relation, limit) -%}
    {#- The rows of `describe history <relation> limit <limit>`, newest first, read on the
        driver by the project's procedure cdc_lakehouse.delta.commits (jvm/functions,
        DeltaCommits.java): Delta's statement runs a Spark job for them, several times the
        cost of reading the few commit files. Delta's statement when the JVM functions are off
        (var cdc_jvm_functions). -#}
    {%- if var('cdc_jvm_functions') -%}
        {{ return(run_query('call cdc_lakehouse.delta.commits(' ~ cdc_sql_string(relation | string) ~ ', ' ~ limit ~ ')').rows) }}
    {%- endif -%}
    {{ return(run_query('describe history ' ~ relation ~ ' limit ' ~ limit).rows) }}
{%- endmacro %}

{% macro cdc_rowless_maintenance() -%}
    {#- Delta operations that rewrite a table's files, or clean them up, without changing a row:
        cdc_last_commit passes over their commits to the write before them -#}
    {{ return(['OPTIMIZE', 'REORG', 'VACUUM START', 'VACUUM END']) }}
{%- endmacro %}

{% macro cdc_remember_commit(relation, commit) -%}
    {#- Keep `commit` (cdc_last_commit's) as the newest of `relation` for the rest of this
        invocation (cdc_invocation_memo, as cdc_hand_over does): for a table upstream of
        the running model, or a model's own once nothing it runs will write to it any more
        (silver's parse, when its placeholders are all taken). -#}
    {%- if execute and commit.id is not none -%}
        {%- do cdc_invocation_memo('commits').update({relation | string: commit}) -%}
    {%- endif -%}
{%- endmacro %}

{% macro cdc_commit_id(relation, row) -%}
    {#- The id of a commit of the Delta table `relation`, from its row of `describe history`:
        {'table', 'version', 'committed_at'} (cdc_last_commit) -#}
    {#- the time as Python writes a datetime, whether the row came through a session (a
        datetime) or the Thrift server (text): a row of meta.cdc_build_progress written by one
        is found by the other -#}
    {%- set stamp = row['timestamp'] -%}
    {%- if stamp is string -%}
        {%- set parts = modules.re.match('^([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.]([0-9]{1,6}))?$', stamp) -%}
        {%- if parts -%}
            {%- set stamp = modules.datetime.datetime.strptime(
                parts.group(1) ~ ' ' ~ parts.group(2) ~ '.' ~ ((parts.group(3) or '') ~ '000000')[:6], '%Y-%m-%d %H:%M:%S.%f') -%}
        {%- endif -%}
    {%- endif -%}
    {{ return({'table': relation | string, 'version': row['version'] | int, 'committed_at': stamp | string}) }}
{%- endmacro %}

{% macro cdc_unchanged_since(recorded, commit) -%}
    {#- Whether the table `commit` (cdc_last_commit) belongs to has had no commit since the model's
        last write read it: that write recorded the same id as its upstream (`recorded`,
        cdc_watermark's). Then the model has nothing new to read, which no query needs to tell.
        False when nothing was recorded (a watermark scanned, a first build) or the table's
        newest commit is unknown. -#}
    {{ return(commit.id is not none and recorded.get('upstream') == commit.id) }}
{%- endmacro %}

{% macro _cdc_earlier_layout() -%}
    {{ exceptions.raise_compiler_error(
        this ~ " holds apply orders in the layout of an earlier version of cdc-lakehouse, which do not compare"
        ~ " with the ones this version writes: rebuild the lakehouse's models once with"
        ~ " `lakehouse build --full-refresh` (bronze is kept; silver and gold are parsed again from it)"
    ) }}
{%- endmacro %}

{% macro cdc_newer_than(column, newest) -%}
    {#-
        SQL: `column` is newer than `newest` (a watermark from cdc_watermark: a timestamp as a
        string; none, nothing consumed yet, lets everything through). Delta keeps timestamps
        in its file statistics to the millisecond and reads a file's maximum as one
        millisecond later than that, so `column > W`, W the newest time already consumed,
        cannot skip the files of the batch W came from: after a first build, the whole
        initial load is read again by the next build. The loader stamps its batches on a grid
        of even milliseconds (lakehouse.bronze), so when W lies on it, `column > W` is `column
        >= W + 2 ms`, which the statistics decide (W's files read as at most W + 1 ms): that
        bound is added. A W off the grid (a batch landed by an earlier loader) gets the plain
        comparison only.
    -#}
    {%- if newest is none -%}
        {{ return('true') }}
    {%- endif -%}
    {%- set predicate = column ~ " > timestamp '" ~ newest ~ "'" -%}
    {%- set parts = modules.re.match('^([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.]([0-9]{1,6}))?$', newest) -%}
    {%- if parts -%}
        {%- set micros = ((parts.group(2) or '') ~ '000000')[:6] -%}
        {%- if (micros | int) % 2000 == 0 -%}
            {%- set stamp = modules.datetime.datetime.strptime(parts.group(1) ~ '.' ~ micros, '%Y-%m-%d %H:%M:%S.%f') -%}
            {%- set next_stamp = stamp + modules.datetime.timedelta(milliseconds=2) -%}
            {%- set predicate = predicate ~ ' and ' ~ column ~ " >= timestamp '" ~ next_stamp.strftime('%Y-%m-%d %H:%M:%S.%f')[:-3] ~ "'" -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(predicate) }}
{%- endmacro %}

{% macro cdc_record_watermark(ingested_at, extra=none) -%}
    {#-
        Record, for this model's next run, that its write consumes up to `ingested_at` (a
        string: the newest ingest time it reads), with the layout of its apply orders and
        `extra` (a mapping: what else the model consumed up to it). Handed over to the
        post-hook cdc_write_progress, which writes it to meta.cdc_build_progress as the row of
        the version the write made (macros/cdc_build_progress.sql). The model must then read
        nothing newer than `ingested_at`.
    -#}
    {%- if execute and ingested_at is not none -%}
        {%- set mark = {'table': this | string, 'ingested_at': ingested_at, 'apply_order_layout': cdc_apply_order_layout()} -%}
        {%- do mark.update(extra or {}) -%}
        {%- do cdc_hand_over('progress', mark) -%}
    {%- endif -%}
{%- endmacro %}

{% macro cdc_change_counts(changes) -%}
    {#- What a first build reads, at compile time: {'changes': how many, 'truncations': how
        many truncates, 'up_to': the newest ingested_at (a string, none without changes: the
        model reads up to it and records it, cdc_record_watermark), 'orders': none}; none
        outside execution. One pass over two columns of silver. None too when `changes` does
        not exist yet (a lint or compile before any build). Not the apply orders per table:
        Spark would sort every change to take a string's min and max by group; the first
        increment reads them from the open versions instead (cdc_stored_orders). -#}
    {%- if not execute or adapter.get_relation(changes.database, changes.schema, changes.identifier) is none -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(_cdc_count_changes(changes, per_table=false)) }}
{%- endmacro %}

{% macro cdc_truncation_count(changes, watermark) -%}
    {#- How many truncates `changes` hold up to `watermark` (a string): what the runs before
        consumed, for a table whose last commit did not record it. One pass over two columns. -#}
    {{ return(run_query(
        'select count(*) as truncations from ' ~ changes ~ " where op = 't' and ingested_at <= timestamp '" ~ watermark ~ "'"
    ).rows[0]['truncations']) }}
{%- endmacro %}

{% macro _cdc_count_changes(changes, per_table=true) -%}
    {#- {'changes', 'truncations', 'unavailable' (changes with a column Debezium did not send),
        'up_to' (newest ingested_at as a string, none without
        changes), 'orders' (per source table, cdc_table_order_key: [its oldest apply order, its
        newest]; none unless `per_table`)} of `changes` (a relation or a parenthesized query),
        in one query: a row per source table, or one row -#}
    {%- if per_table -%}
        {%- set query = 'select ' ~ cdc_table_order_key() ~ ' as table_key, count(*) as changes,'
            ~ ' count_if(op = \'t\') as truncations, cast(max(max(ingested_at)) over () as string) as up_to,'
            ~ ' count_if(size(unavailable_columns) > 0) as unavailable,'
            ~ ' min(apply_order) as first_order, max(apply_order) as last_order'
            ~ ' from ' ~ changes ~ ' as counted_changes group by 1' -%}
    {%- else -%}
        {%- set query = 'select count(*) as changes, count_if(op = \'t\') as truncations,'
            ~ ' count_if(size(unavailable_columns) > 0) as unavailable,'
            ~ ' cast(max(ingested_at) as string) as up_to from ' ~ changes ~ ' as counted_changes' -%}
    {%- endif -%}
    {%- set counts = {'changes': 0, 'truncations': 0, 'unavailable': 0, 'up_to': none, 'orders': {} if per_table else none} -%}
    {%- for row in run_query(query).rows if row['changes'] > 0 -%}
        {%- do counts.update({
            'changes': counts.changes + row['changes'],
            'truncations': counts.truncations + row['truncations'],
            'unavailable': counts.unavailable + row['unavailable'],
            'up_to': row['up_to'],
        }) -%}
        {%- if per_table -%}
            {%- do counts.orders.update({row['table_key']: [row['first_order'], row['last_order']]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(counts) }}
{%- endmacro %}

{% macro cdc_table_order_key() -%}
    {#- SQL: the key of a change's source table in a record of apply orders per table
        (cdc_stored_orders). Two tables whose keys coincide only share one newest order, which
        makes the late check more cautious, never wrong. -#}
    concat_ws('/', coalesce(source_database, ''), coalesce(source_schema, ''), source_table)
{%- endmacro %}

{% macro cdc_stored_orders(latest_versions) -%}
    {#- {table key (cdc_table_order_key): the newest apply order stored of the table} from
        `latest_versions` (SQL of a relation of each key's latest stored change), read at
        compile time: for a table whose last commit did not record it (cdc_new_change_counts). -#}
    {%- set orders = {} -%}
    {%- for row in run_query(
        'select ' ~ cdc_table_order_key() ~ ' as table_key, max(apply_order) as last_order from '
        ~ latest_versions ~ ' as latest group by 1'
    ).rows -%}
        {%- do orders.update({row['table_key']: row['last_order']}) -%}
    {%- endfor -%}
    {{ return(orders) }}
{%- endmacro %}

{% macro cdc_new_change_counts(changes, watermark, latest_versions, broadcast_limit=250000, stored_orders=none) -%}
    {#-
        What the changes newer than `watermark` (cdc_watermark's string) hold, read at compile
        time: {'changes': how many, 'truncations': how many truncates, 'up_to': the newest
        ingested_at among them, or the watermark when there is none (a string: the model
        reads up to it and records it, cdc_record_watermark)}; none outside execution and
        without a watermark (a first run, an empty table), when a model must assume anything. A query over the
        new files of silver only (Delta skips the rest by ingested_at). Gold uses it to compile
        its truncation branch as empty when there is no truncate (Spark then drops the scan of
        the stored keys that only a truncate needs) and to broadcast the keys of a small
        increment (at most `broadcast_limit` changes) instead of shuffling every stored version
        to meet them.

        And 'late', from `latest_versions` (SQL of a relation: source_database, source_schema,
        source_table, pk, apply_order of each key's latest stored change): how many keys (a
        key-changing update's old key included) get a change no newer than their latest stored
        one, a late arrival or a replay (a copy of the latest stored change itself counts, and
        so does a change at its vendor position: a redelivery at a later Kafka offset). With
        no late key, every new change of a key comes after all it has stored, and a model whose
        stored rows only a later change can touch may MERGE its keys' latest rows alone. A
        second query, run only for a small increment: its keys are broadcast to the scan of the
        latest versions (the scan needs no shuffle); with no change nothing is scanned (late is
        0), and a larger increment gets late = none (unknown: take the full path). With
        `stored_orders` (the newest stored apply order per table, cdc_stored_orders), an
        increment of any size whose every change is newer than its table's newest stored one
        has late = 0 without that query.

        And 'orders': per table of the new changes (cdc_table_order_key), [oldest, newest]
        apply order, for the model to record what it stored.
    -#}
    {%- if not execute or watermark is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set new_changes -%}
        (select * from {{ changes }} where {{ cdc_newer_than('ingested_at', watermark) }})
    {%- endset -%}
    {%- set counts = _cdc_count_changes(new_changes) -%}
    {%- do counts.update({'up_to': counts.up_to or watermark}) -%}
    {#- no key can be late when every table's oldest new change is newer than the newest
        one stored of the table (a key's latest stored change is at most that): the usual
        case, decided without reading the stored versions. A table with none stored has no
        key to be late for -#}
    {%- if stored_orders is mapping and counts.changes > 0 -%}
        {%- set older = [] -%}
        {%- for table_key, span in counts.orders.items() -%}
            {%- set stored = stored_orders.get(table_key) -%}
            {%- if stored is not none and (span[0] is none or span[0] <= stored or cdc_same_vendor_position(span[0], stored)) -%}
                {%- do older.append(table_key) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if not older -%}
            {%- do counts.update({'late': 0}) -%}
            {{ return(counts) }}
        {%- endif -%}
    {%- endif -%}
    {%- if counts.changes == 0 or counts.changes > broadcast_limit -%}
        {%- do counts.update({'late': 0 if counts.changes == 0 else none}) -%}
        {{ return(counts) }}
    {%- endif -%}
    {%- set query -%}
        select /*+ broadcast(new_keys) */ count(*) as late
        from (
            select
                source_database, source_schema, source_table, pk, min(apply_order) as first_new_order,
                collect_set(vendor_sequence) as positions
            from (
                select source_database, source_schema, source_table, pk, apply_order, vendor_sequence
                from {{ new_changes }} as changes_with_key
                where op in ('c', 'u', 'r', 'd')
                union all
                select source_database, source_schema, source_table, before_pk as pk, apply_order, vendor_sequence
                from {{ new_changes }} as changes_with_old_key
                where op = 'u' and before_pk is not null
            ) as touched
            group by source_database, source_schema, source_table, pk
        ) as new_keys
        inner join {{ latest_versions }} as latest
            on
                new_keys.source_database <=> latest.source_database
                and new_keys.source_schema <=> latest.source_schema
                and new_keys.source_table = latest.source_table
                and new_keys.pk = latest.pk
                and (
                    new_keys.first_new_order <= latest.apply_order
                    or array_contains(new_keys.positions, latest.vendor_sequence)
                )
    {%- endset -%}
    {%- do counts.update({'late': run_query(query).rows[0]['late']}) -%}
    {{ return(counts) }}
{%- endmacro %}
