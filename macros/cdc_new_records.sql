{% macro cdc_new_records(incremental) -%}
    {#-
        What silver.cdc_parsed is about to read, routed once at compile time. The batches
        landed in bronze since the parse's last run, read from bronze's log (cdc_landed_batches:
        each loader commit names its batch's topics, format and ingest time), or else a query
        over the topic and ingest format of the bronze records landed after the newest one
        already parsed, resolve each (topic, format given at ingest) to a format (that one,
        else the cdc_topic_formats seed or var); only the records of a topic that neither names
        are read, by a second query, to detect their format from their shape.
        Whether a value is UTF-8 is left to the model's branches (cdc_parsed_rows). The model
        then compiles in only the parsers it needs, looks the format of a topic up in a literal
        map instead of detecting it again in every parser's branch, lets each parser read only
        the files of its own topics (Delta data skipping on the topic), and drops the branch of
        unparsable records when there is none.

        Returns {
            'after': the newest ingested_at already parsed (string; none on a first run),
            'upstream': the id of bronze's newest commit before the query (cdc_last_commit), for
                the write to record. When the table's last write recorded the same id, bronze
                has had no commit since: nothing new, without the query,
            'up_to': the newest ingested_at among the new records (none: no new record),
            'none_new': true when there is no new record,
            'formats': the resolved format ids (none outside execution: every parser),
            'topic_formats': topic -> format id, for topics whose new records all resolve to one
                known format,
            'parser_topics': format id -> its topics, when every record of that format comes
                from such a topic (else the format is absent: its parser reads every record),
            'mixed': true when some record's topic is not in topic_formats (full routing needed),
            'unparsable': how many records cannot reach a parser (no format, an unknown one, or
                one without a parser; values that are not UTF-8 are not counted); routed from
                bronze's log, how many (topic, format) pairs: only 0 or not counts,
            'seeded': what the topic patterns gave the topics routed from bronze's log
                (_cdc_route_batches), for the write to record: the next run's routing reuses
                it while the patterns are the same. None when nothing is to be recorded,
            'code': the digest of the code the table's last write ran (cdc_code_digest, which
                the model records with its watermark); none when it recorded none,
            'recorded': everything that write recorded with its watermark (cdc_watermark's
                `recorded`; empty on a first run),
        }
        The run reads exactly the records looked at here (ingested_at in (after, up_to]), so a
        record landed meanwhile waits for the next run.
    -#}
    {%- set result = {
        'after': none, 'upstream': none, 'up_to': none, 'none_new': false, 'formats': none,
        'topic_formats': {}, 'parser_topics': {}, 'mixed': true, 'unparsable': 1, 'seeded': none,
        'code': none, 'recorded': {},
    } -%}
    {%- set bronze = source('bronze', 'kafka_records') -%}
    {%- if not execute or adapter.get_relation(bronze.database, bronze.schema, bronze.identifier) is none -%}
        {{ return(result) }}
    {%- endif -%}
    {#- bronze's newest commit, before the query below reads bronze: the write records it, and
        a later run that finds it still the newest knows that no record landed since -#}
    {#- with the seven commits before it, which cdc_landed_batches reads when the batches since the
        last run are among them (a following loader's build finds one to three): one read of
        the log, not two -#}
    {%- set bronze_commit = cdc_last_commit(bronze, recent=8, marked=false) -%}
    {%- do result.update({'upstream': bronze_commit.id}) -%}
    {%- set recorded = result.recorded -%}
    {%- if incremental -%}
        {%- do result.update({'after': cdc_watermark('ingested_at', recorded=recorded)}) -%}
        {%- do result.update({'code': recorded.get('code')}) -%}
    {%- endif -%}
    {#- first by topic and ingest format alone (neither reads a message): the format given at
        ingest, else the seed's or the var's pattern for the topic -#}
    {%- set query -%}
        with new_records as (
            select topic, format, ingested_at
            from {{ bronze }}
            where {{ cdc_newer_than('ingested_at', result.after) }}
        ),

        grouped as (
            select topic, format, count(*) as records, max(ingested_at) as up_to
            from new_records
            group by topic, format
        ),

        routed as (
            {#- each (topic, ingest format) with its topic's longest matching pattern's format.
                grouped is named once, because named twice (its topics, then the rows joined to
                them) the plan held two scans of bronze -#}
            select
                grouped.topic,
                grouped.format,
                grouped.records,
                grouped.up_to,
                max_by(patterns.format, length(patterns.topic_pattern)) as seeded_format
            from grouped
            left join ({{ cdc_topic_format_patterns() }}) as patterns
                on grouped.topic rlike patterns.topic_pattern
            group by grouped.topic, grouped.format, grouped.records, grouped.up_to
        )

        select
            topic,
            coalesce(format, seeded_format) as resolved_format,
            sum(records) as records,
            cast(max(up_to) as string) as up_to
        from routed
        group by topic, coalesce(format, seeded_format)
    {%- endset -%}
    {%- set rows = [] -%}
    {%- set to_detect = [] -%}
    {#- no rows when bronze has had no commit since the table's last write: the answer for no new
        record, computed below from no rows. Else the loader's batches since the commit the last
        write recorded (since bronze's first commit when nothing is parsed yet), from bronze's
        log; the query when the log cannot tell -#}
    {%- set since = recorded.get('upstream') if result.after is not none else none -%}
    {%- if cdc_unchanged_since(recorded, bronze_commit) -%}
        {%- set routed_rows = [] -%}
    {%- else -%}
        {%- set batches = cdc_landed_batches(bronze, bronze_commit, since)
            if result.after is none or since is not none else none -%}
        {%- if batches is not none -%}
            {%- set seeded = {'known': recorded.get('seeded')} -%}
            {%- set routed_rows = _cdc_route_batches(batches, seeded) -%}
            {%- do result.update({'seeded': seeded.get('record')}) -%}
        {%- else -%}
            {%- set routed_rows = run_query(query).rows -%}
        {%- endif -%}
    {%- endif -%}
    {%- for row in routed_rows -%}
        {#- a dump's unrouted lines go to cdc_route_records, which gives them no format: the
            quarantine, whatever format their batch was given -#}
        {%- if row['resolved_format'] is none or row['topic'] == cdc_unrouted_topic() -%}
            {%- do to_detect.append(row['topic']) -%}
        {%- else -%}
            {%- do rows.append(row) -%}
        {%- endif -%}
    {%- endfor -%}
    {#- then the messages of the other topics, for their shapes (cdc_detect_format) -#}
    {%- if to_detect -%}
        {%- set query -%}
            with new_records as (
                select topic, format, key, value, ingested_at
                from {{ bronze }}
                where
                    {{ cdc_newer_than('ingested_at', result.after) }}
                    and (format is null or topic = {{ cdc_sql_string(cdc_unrouted_topic()) }})
                    and topic in ({{ cdc_sql_list(to_detect) }})
            ),

            routed as (
                {{ cdc_route_records('new_records') }}
            )

            select topic, resolved_format, count(*) as records, cast(max(ingested_at) as string) as up_to
            from routed
            group by topic, resolved_format
        {%- endset -%}
        {#- the same columns as the first query's -#}
        {%- do rows.extend(run_query(query).rows) -%}
    {%- endif -%}
    {%- set known = cdc_formats() -%}
    {%- set formats = [] -%}
    {%- set stamps = [] -%}
    {%- set formats_of_topic = {} -%}
    {%- set unparsable = [0] -%}
    {%- for row in rows -%}
        {%- set fmt = row['resolved_format'] -%}
        {%- do stamps.append(row['up_to']) -%}
        {%- do formats_of_topic.setdefault(row['topic'], []).append(fmt) -%}
        {%- if fmt is not none and fmt not in formats -%}
            {%- do formats.append(fmt) -%}
        {%- endif -%}
        {%- if fmt is none or fmt not in known or context.get(known[fmt]) is none -%}
            {%- do unparsable.append(row['records']) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set topic_formats = {} -%}
    {%- for topic, fmts in formats_of_topic.items() -%}
        {%- if fmts | length == 1 and fmts[0] is not none -%}
            {%- do topic_formats.update({topic: fmts[0]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set parser_topics = {} -%}
    {%- for fmt in formats -%}
        {%- set topics = [] -%}
        {%- set pure = [true] -%}
        {%- for topic, fmts in formats_of_topic.items() if fmt in fmts -%}
            {%- do topics.append(topic) -%}
            {%- if topic not in topic_formats -%}
                {%- do pure.append(false) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if pure | min -%}
            {%- do parser_topics.update({fmt: topics | sort}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do result.update({
        'up_to': (stamps | max) if stamps else none,
        'none_new': not stamps,
        'formats': formats,
        'topic_formats': topic_formats,
        'parser_topics': parser_topics,
        'mixed': formats_of_topic | length != topic_formats | length,
        'unparsable': unparsable | sum,
    }) -%}
    {{ return(result) }}
{%- endmacro %}

{% macro cdc_landed_batches(bronze, newest, since, limit=100) -%}
    {#-
        The batches the loader (lakehouse.bronze) landed in `bronze` after the commit `since`
        (an id cdc_last_commit gave, which the parse's last write recorded; none: from the
        table's first commit on) up to the commit `newest` (cdc_last_commit's), read from their
        commits' user metadata in bronze's log: a list of {'id', 'format', 'topics',
        'ingested_at'}, one per commit that landed records. So the parse routes a run's records
        without a query over them, whose cost grows with the records.

        None, for the caller to query the records instead, whenever the log cannot tell: more
        than `limit` commits to read; `since` not in the log as recorded (the table was created
        again, or its log was cleaned up); a commit in between that is not the loader's and
        may have added records (another writer's, an earlier loader's, one that lists no topics)
        - commits that add no record (a property set, an OPTIMIZE) are passed over; or a session
        whose time zone is not UTC (the stamps are UTC text, and the model reads them as
        timestamp literals of the session's zone).
    -#}
    {%- if newest.id is none or (since is not none and since.get('table') != (bronze | string)) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set first = (since.version | int) if since is not none else 0 -%}
    {%- set count = newest.id.version - first + 1 -%}
    {%- if count > limit -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set zone = run_query('select current_timezone() as zone').rows[0]['zone'] -%}
    {%- if zone not in ('UTC', 'Etc/UTC', 'GMT', 'Z', '+00:00') -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set commits = {} -%}
    {#- the log's rows cdc_last_commit read with the newest commit, when they reach back to `since` -#}
    {%- set recent = newest.get('recent') or [] -%}
    {%- for row in (recent if recent | length >= count else cdc_newest_commits(bronze, count)) -%}
        {%- do commits.update({row['version'] | int: row}) -%}
    {%- endfor -%}
    {%- if since is not none and (commits.get(first) is none or cdc_commit_id(bronze, commits[first]) != since) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set batches = [] -%}
    {%- for version in range(first if since is none else first + 1, newest.id.version + 1) -%}
        {%- set row = commits.get(version) -%}
        {%- if row is none -%}
            {{ return(none) }}
        {%- endif -%}
        {%- set metadata = fromjson(row['userMetadata'], {}) if row['userMetadata'] else {} -%}
        {%- set batch = metadata.get('cdc_lakehouse_batch') if metadata is mapping else none -%}
        {%- if batch is mapping and batch.get('topics') is sequence and batch.get('topics') is not string
            and batch.get('ingested_at') is string -%}
            {%- do batches.append(batch) -%}
        {%- elif row['operation'] not in cdc_recordless_operations() -%}
            {{ return(none) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(batches) }}
{%- endmacro %}

{% macro cdc_recordless_operations() -%}
    {#- Delta operations that add no record to a table: a commit of one of them, in bronze's log,
        needs no routing (cdc_landed_batches) -#}
    {{ return([
        'CREATE TABLE', 'SET TBLPROPERTIES', 'UNSET TBLPROPERTIES', 'OPTIMIZE', 'VACUUM START',
        'VACUUM END', 'ADD CONSTRAINT', 'DROP CONSTRAINT', 'ADD COLUMNS', 'CHANGE COLUMN',
        'UPGRADE PROTOCOL',
    ]) }}
{%- endmacro %}

{% macro _cdc_route_batches(batches, memo) -%}
    {#- The rows the routing query gives (topic, resolved_format, records, up_to) for the
        records of `batches` (cdc_landed_batches), one per (topic, resolved format): the format
        given at ingest, else the topic's longest matching pattern (cdc_topic_format_patterns,
        matched by Spark as the query matches them, in a query over the topics alone), else
        none (detected from the shapes). records is 1: the log does not count them.

        `memo`, a mapping: 'known' is what the last run recorded (its 'record', or none), and
        'record' is set to what this run should record: {'patterns': the patterns' version
        (cdc_topic_format_patterns_version), 'formats': topic -> its pattern's format}. A feed's
        next batch lands the same topics, and while the patterns are the same version, their
        formats are taken from it: the query (in a fresh process, the first read of the seed)
        is run only for topics new to it. At most
        `limit` topics are recorded: beyond, every run asks the query. -#}
    {%- set limit = 2000 -%}
    {%- set seeded = {} -%}
    {%- set unnamed = [] -%}
    {%- for batch in batches if batch.get('format') is none -%}
        {%- for topic in batch.topics if topic not in unnamed -%}
            {%- do unnamed.append(topic) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set version = cdc_topic_format_patterns_version() if unnamed else none -%}
    {%- set known = memo.get('known') -%}
    {%- if version is not none and known is mapping and known.get('patterns') == version and known.get('formats') is mapping -%}
        {%- do seeded.update(known.formats) -%}
    {%- endif -%}
    {%- set unnamed = unnamed | reject('in', seeded) | list -%}
    {%- if unnamed -%}
        {%- set query -%}
            select landed.topic, max_by(patterns.format, length(patterns.topic_pattern)) as seeded_format
            from (select explode(array({{ cdc_sql_list(unnamed) }})) as topic) as landed
            left join ({{ cdc_topic_format_patterns() }}) as patterns
                on landed.topic rlike patterns.topic_pattern
            group by landed.topic
        {%- endset -%}
        {%- for row in run_query(query).rows -%}
            {%- do seeded.update({row['topic']: row['seeded_format']}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if version is not none and seeded | length <= limit -%}
        {%- do memo.update({'record': {'patterns': version, 'formats': seeded}}) -%}
    {%- elif version is none and known is mapping -%}
        {#- no topic needed a pattern: what was known stays known, for a later run to check -#}
        {%- do memo.update({'record': known}) -%}
    {%- endif -%}
    {%- set routed = {} -%}
    {%- for batch in batches -%}
        {%- for topic in batch.topics -%}
            {%- set key = (topic, batch.format if batch.get('format') is not none else seeded.get(topic)) -%}
            {%- if routed.get(key) is none or batch.ingested_at > routed[key] -%}
                {%- do routed.update({key: batch.ingested_at}) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set rows = [] -%}
    {%- for key, up_to in routed.items() -%}
        {%- do rows.append({'topic': key[0], 'resolved_format': key[1], 'records': 1, 'up_to': up_to}) -%}
    {%- endfor -%}
    {{ return(rows) }}
{%- endmacro %}
