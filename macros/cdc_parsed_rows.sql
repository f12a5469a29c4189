{% macro cdc_parsed_rows(records, plan, fast=true) -%}
    {#-
        The CTEs that turn bronze records into silver.cdc_parsed's rows, ending with `final`
        (the caller selects from it). `records`: the name of a CTE of bronze records;
        `plan`: what cdc_new_records worked out about them (the routing, the formats, whether
        any is unparsable). Only the parsers of the plan's formats are compiled in (the plan
        of all fifteen takes Spark tens of seconds to analyse, even for a handful of records).

        With `fast`, a format with a fast parser (cdc_fast_parsers) is read by it alone, and a
        message it does not read becomes a placeholder row (cdc_leftover_reason) that
        cdc_parse_leftovers replaces right after the write; the fast parsers share one branch,
        one read of the bronze records. Without, every format is read by its SQL parser, each in
        a branch that reads only the bronze files of its own topics.
    -#}
{%- set parsed_formats = [] -%}
{%- for format_id, parser in cdc_formats().items() if context.get(parser) is not none -%}
    {%- do parsed_formats.append(format_id) -%}
{%- endfor %}
{%- set parsers = {} -%}
{%- for format_id, parser in cdc_formats().items() if format_id in parsed_formats -%}
    {%- if plan.formats is none or format_id in plan.formats -%}
        {%- do parsers.setdefault(parser, []).append(format_id) -%}
    {%- endif -%}
{%- endfor %}
{#- the formats a fast parser reads here: their branch quarantines a value that is not UTF-8
    itself; the unparsable branch does it for the others #}
{%- set fast_parsers = cdc_fast_parsers() if fast else {} -%}
{%- set fast_formats = [] -%}
{%- set sql_formats = [] -%}
{%- for parser, format_ids in parsers.items() -%}
    {%- do (fast_formats if parser in fast_parsers else sql_formats).extend(format_ids) -%}
{%- endfor %}

routed as (

    {{ cdc_route_records(records, plan.topic_formats, detect=plan.mixed) }}

),
{%- if fast_formats %}

records_for_fast_parsers as (

    {#- every format a fast parser reads shares this one branch, so the new bronze records are
        read once, not once per format. A fast parser's branch takes the values that are not
        UTF-8 too, and quarantines them. #}
    select * from routed
    {%- set topics = _cdc_parser_topics(plan, fast_formats) %}
    {%- if topics is not none %}
    where topic in ({{ cdc_sql_list(topics) }})
    {%- endif %}

),

fast_parsed as (

    {#- the common message of each format read once, in the JVM, by its format's parser; null
        for any other message. Its own projection, so that Spark runs it once per record, not
        once per column. #}
    select
        * except (fast),
        case
        {%- for parser, format_ids in parsers.items() if parser in fast_parsers %}
            when resolved_format in ('{{ format_ids | join("', '") }}') and (value is null or value_is_utf8)
                and (key is null or key_is_utf8)
                then {{ fast_parsers[parser] }}(value_text, key_text, topic, `partition`, `offset`)
        {%- endfor %}
        end as fast
    from records_for_fast_parsers

),

parsed_by_fast_parsers as (

    {#- a message a fast parser does not read gets a placeholder row, which the post-hook
        cdc_parse_leftovers replaces with the SQL parser's rows: the SQL parser's plan is
        compiled only for the few records that need it, and no query reads a record twice #}
    {%- set exprs = cdc_record_passthrough('f') %}
    {%- set reasons = [] %}
    {%- for parser, format_ids in parsers.items() if parser in fast_parsers %}
        {%- do reasons.append("when f.resolved_format in ('" ~ (format_ids | join("', '")) ~ "') then "
            ~ cdc_sql_string(cdc_leftover_reason(fast_parsers[parser]))) %}
    {%- endfor %}
    {%- do exprs.update({
        'row_index': '0',
        'apply_order': 'case when not f.value_is_utf8 or not f.key_is_utf8 then '
            ~ cdc_apply_order('1', [], 'f.partition', 'f.offset', '0') ~ ' end',
        'parse_error': "case when not f.value_is_utf8 then 'value is not valid UTF-8' "
            ~ "when not f.key_is_utf8 then 'key is not valid UTF-8' "
            ~ (reasons | join(' ')) ~ ' end',
    }) %}
    select
        {{ cdc_parser_select(exprs) }}
    from fast_parsed as f
    where f.resolved_format in ('{{ fast_formats | join("', '") }}')

),
{%- endif %}
{%- for parser, format_ids in parsers.items() if parser not in fast_parsers %}

records_for_{{ parser }} as (

    {#- the topic test first: every branch scans all new bronze records, and the UTF-8 check
        (a pass over the bytes) is then only paid for this parser's own records #}
    select * from routed
    where
        {%- set topics = _cdc_parser_topics(plan, format_ids) %}
        {%- if topics is not none %}
        topic in ({{ cdc_sql_list(topics) }})
        and
        {%- endif %}
        (value is null or value_is_utf8)
        and (key is null or key_is_utf8)

),

parsed_by_{{ parser }} as (

    {{ context[parser]('records_for_' ~ parser, format_ids) }}

),
{%- endfor %}

unparsable as (

    {%- set known_formats = "'" ~ (cdc_formats().keys() | join("', '")) ~ "'" %}
    {%- set exprs = cdc_record_passthrough('routed') %}
    {%- do exprs.update({
        'row_index': '0',
        'apply_order': cdc_apply_order('1', [], 'routed.partition', 'routed.offset', '0'),
        'parse_error': "case
            when topic = " ~ cdc_sql_string(cdc_unrouted_topic()) ~ " then " ~ cdc_unrouted_reason('headers') ~ "
            when value is not null and not value_is_utf8 then 'value is not valid UTF-8'
            when key is not null and not key_is_utf8 then 'key is not valid UTF-8'
            when resolved_format like 'ambiguous:%' then 'ambiguous format: the message could be any of '
                || substr(resolved_format, 11) || '; set --format at ingest or a cdc_topic_formats pattern'
            when resolved_format is null then 'unknown format: none given at ingest, no cdc_topic_formats '
                || 'pattern matches the topic, and the message shape matches no known format'
            when resolved_format in (" ~ known_formats ~ ")
                then 'no parser: format ' || resolved_format || ' is not supported yet'
            else 'unknown format ' || resolved_format || ': not a format id of cdc-lakehouse'
        end",
    }) %}
    select
        {{ cdc_parser_select(exprs) }}
    from routed
    where
        routed.resolved_format is null
        or routed.resolved_format not in ('{{ parsed_formats | join("', '") }}')
        or (
            {%- if fast_formats %}
            routed.resolved_format not in ('{{ fast_formats | join("', '") }}') and
            {%- endif %}
            (
                (routed.value is not null and not routed.value_is_utf8)
                or (routed.key is not null and not routed.key_is_utf8)
            )
        )

),

unioned as (

    {%- if fast_formats %}
    select * from parsed_by_fast_parsers
    union all
    {%- endif %}
    {%- for parser in parsers if parser not in fast_parsers %}
    select * from parsed_by_{{ parser }}
    union all
    {%- endfor %}
    select * from unparsable
    {#- no record needs the unparsable branch (every format has a parser, and a fast parser's
        branch quarantines its own values that are not UTF-8): it is kept for its columns,
        reading nothing #}
    {%- if plan.unparsable == 0 and not sql_formats %}
    where false
    {%- endif %}

),

op_codes as (

    select * from {{ ref('cdc_op_codes') }}

),

key_overrides as (

    select
        source_database,
        source_table,
        split(key_columns, '[|]') as key_columns
    from {{ ref('cdc_key_overrides') }}

),

classified as (

    select
        unioned.*,
        op_codes.op,
        op_codes.record_kind as coded_kind,
        op_codes.control_kind,
        {#- each name once and none null: the key's map below would fail the whole run #}
        array_except(
            coalesce(key_overrides.key_columns, unioned.key_columns), array(cast(null as string))
        ) as effective_key_columns,
        case when op_codes.op = 'd' then unioned.before_values else unioned.after_values end
            as key_image
    from unioned
    left join op_codes
        on
            unioned.source_format = op_codes.format
            and unioned.vendor_op = op_codes.vendor_op
    left join key_overrides
        on
            unioned.source_database <=> key_overrides.source_database
            and unioned.source_table = key_overrides.source_table

),

keyed as (

    select
        *,
        {#- a key of one column (most tables) without the lambda: Spark runs lambdas outside
            its generated code #}
        case
            when size(effective_key_columns) = 1 then {{ cdc_map_to_json(
                "map(effective_key_columns[0], coalesce(
                    element_at(key_image, effective_key_columns[0]), element_at(key_values, effective_key_columns[0])
                ))"
            ) }}
            when size(effective_key_columns) > 0 then {{ cdc_map_to_json(
                "map_from_arrays(effective_key_columns, transform(effective_key_columns,
                    k -> coalesce(element_at(key_image, k), element_at(key_values, k))))"
            ) }}
            {#- no key anywhere: the whole row is its identity (multiset semantics) -#}
            else {{ cdc_map_to_json('key_image') }}
        end as pk,
        case
            when op = 'u' and size(effective_key_columns) = 1 and before_values is not null
                then {{ cdc_map_to_json(
                    "map(effective_key_columns[0], element_at(before_values, effective_key_columns[0]))"
                ) }}
            when op = 'u' and size(effective_key_columns) > 0 and before_values is not null
                then {{ cdc_map_to_json(
                    "map_from_arrays(effective_key_columns, transform(effective_key_columns,
                        k -> element_at(before_values, k)))"
                ) }}
            {#- no key: the update replaces its before row in the multiset #}
            when op = 'u' and before_values is not null then {{ cdc_map_to_json('before_values') }}
        end as before_pk
    from classified

),

judged as (

    select
        {#- the record's own coordinates, topic:partition:offset:row_index: unique, readable (it
            names the Kafka record), and about half the characters of a sha256 in hex, which no
            codec shrinks and which made the ids a large part of silver's and the history's
            files. The last three fields are integers, so a topic that holds a colon cannot
            make two ids equal. #}
        concat_ws(':', kafka_topic, kafka_partition, kafka_offset, row_index) as record_id,
        case
            when parse_error is not null or coded_kind is null or not coordinates_valid then 'quarantine'
            when coded_kind = 'change' and source_table is null then 'quarantine'
            when coded_kind = 'change' and op <> 't' and pk is null then 'quarantine'
            else coded_kind
        end as record_kind,
        control_kind,
        case
            when parse_error is not null then parse_error
            {#- the apply order encodes them: one without would order its key's changes by chance #}
            when not coordinates_valid
                then 'invalid Kafka coordinates: partition ' || coalesce(cast(kafka_partition as string), 'missing')
                    || ', offset ' || coalesce(cast(kafka_offset as string), 'missing')
                    || ' (both must be integers from 0)'
            when coded_kind is null
                then 'unknown op ' || coalesce('"' || vendor_op || '"', '(none)')
                    || ' for format ' || source_format
            when coded_kind = 'change' and source_table is null then 'no table: the message names no source table'
            when coded_kind = 'change' and op <> 't' and pk is null
                then 'no key: neither the row image nor the record key holds the key columns'
        end as quarantine_reason,
        source_format,
        source_database,
        source_schema,
        source_table,
        op,
        vendor_op,
        effective_key_columns as key_columns,
        pk,
        case when before_pk <> pk then before_pk end as before_pk,
        before_image,
        after_image,
        column_types,
        {#- the after image's columns that Debezium could not send (unchanged TOASTed values):
            gold completes them from the key's previous version #}
        {{ cdc_unavailable_columns('source_format', 'after_values', 'after_image') }} as unavailable_columns,
        event_time,
        vendor_sequence,
        apply_order,
        transaction_id,
        statement,
        kafka_topic,
        kafka_partition,
        kafka_offset,
        kafka_timestamp,
        row_index,
        raw_value,
        raw_value_base64,
        raw_key,
        ingested_at,
        batch_id,
        current_timestamp() as parsed_at
    from (
        select *, coalesce(kafka_partition >= 0 and kafka_offset >= 0, false) as coordinates_valid
        from keyed
    ) as checked

),

final as (

    {#- the raw message is kept only where it is needed: records that could not be understood #}
    select
        * except (raw_value, raw_value_base64, raw_key, parsed_at),
        case when record_kind = 'quarantine' then raw_value end as raw_value,
        case when record_kind = 'quarantine' then raw_value_base64 end as raw_value_base64,
        case when record_kind = 'quarantine' then raw_key end as raw_key,
        parsed_at
    from judged

)
{%- endmacro %}

{% macro _cdc_parser_topics(plan, format_ids) -%}
    {#- The topics whose records a branch reading `format_ids` takes, each once; none when it
        must take every topic's (a format the plan has no topics for: detected per record) -#}
    {%- set topics = [] -%}
    {%- for format_id in format_ids -%}
        {%- do topics.extend(plan.parser_topics.get(format_id, [none])) -%}
    {%- endfor -%}
    {{ return(none if not topics or none in topics else topics | unique | list) }}
{%- endmacro %}

{% macro cdc_leftover_reason(fast_parser) -%}
    {#- The quarantine reason of a placeholder row: a message the fast parser `fast_parser`
        does not read, which cdc_parse_leftovers hands to the SQL parser. Seen by users only
        when a build stopped between silver's write and its post-hook. -#}
    {{ return(cdc_leftover_prefix() ~ ' the fast parser ' ~ fast_parser ~ ' does not read this message, and'
        ~ ' the SQL parser reads it right after the write of silver.cdc_parsed (its post-hook cdc_parse_leftovers);'
        ~ ' a build stopped in between leaves it here until silver.cdc_parsed is built again') }}
{%- endmacro %}

{% macro cdc_leftover_prefix() -%}
    {{ return('left to the SQL parser:') }}
{%- endmacro %}

{% macro cdc_parse_leftovers() -%}
    {#-
        Post-hook of silver.cdc_parsed: the records its fast parsers did not read (placeholder
        rows, cdc_leftover_reason) parsed by their SQL parsers, in one MERGE that replaces each
        placeholder with the record's rows (its first row takes the placeholder's place, the
        rest are inserted). It reads the bronze records of the placeholders only, and the SQL
        parsers of their formats only, so a run whose messages the fast parsers all read pays
        one look at the quarantine partition, and a run that wrote nothing none (the newest
        commit recorded, below). Every placeholder in the table is taken, so one that a
        stopped build left behind is parsed by the next build.

        Runs before cdc_write_progress, whose row then describes the MERGE's version.
    -#}
    {%- if not execute or not cdc_fast_parsers() -%}
        {{ return('') }}
    {%- endif -%}
    {#- none written since a run took every placeholder: silver's newest commit is still the one
        that run recorded (silver's database property cdc.leftovers_taken, a metastore entry, no
        Delta commit). A build with nothing new then reads nothing of silver (the look below
        would be the process's first read of silver's snapshot) -#}
    {%- set taken = cdc_database_property(this.schema, 'cdc.leftovers_taken') -%}
    {#- `written`: a first build's too (dbt's cache does not know the new table yet), so that
        the build with nothing new after it does not look again -#}
    {%- set newest_commit = cdc_last_commit(this, written=true, marked=false) -%}
    {%- set newest = _cdc_commit_digest(newest_commit) -%}
    {%- if newest is not none and taken == newest -%}
        {#- nothing more is written to silver in this run: the history and the table columns
            take its newest commit from here (cdc_remember_commit) -#}
        {%- do cdc_remember_commit(this, newest_commit) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set placeholder -%}
        record_kind = 'quarantine' and startswith(quarantine_reason, {{ cdc_sql_string(cdc_leftover_prefix()) }})
    {%- endset -%}
    {%- set rows = run_query(
        'select source_format, kafka_topic, cast(min(ingested_at) as string) as first_ingested,'
        ~ ' cast(max(ingested_at) as string) as last_ingested from ' ~ this ~ ' where ' ~ placeholder
        ~ ' group by source_format, kafka_topic'
    ).rows -%}
    {%- if not rows -%}
        {%- do cdc_remember_commit(this, newest_commit) -%}
        {{ return(_cdc_leftovers_taken(newest)) }}
    {%- endif -%}
    {%- set formats = rows | map(attribute='source_format') | unique | list -%}
    {%- set topics = rows | map(attribute='kafka_topic') | unique | sort -%}
    {#- the format each record resolved to at the write is given as its ingest format, so it
        resolves the same now whatever its topic's other records are -#}
    {%- set plan = {'formats': formats, 'topic_formats': {}, 'parser_topics': {}, 'mixed': true, 'unparsable': 0} -%}
    {%- set bronze = source('bronze', 'kafka_records') -%}
    {%- set merge -%}
        merge into {{ this }} as stored
        using (
            with placeholders as (

                select kafka_topic, kafka_partition, kafka_offset, source_format
                from {{ this }}
                where {{ placeholder }}

            ),

            leftover_records as (

                {#- literal bounds: Delta skips every other bronze file #}
                select
                    bronze.* except (format),
                    placeholders.source_format as format
                from {{ bronze }} as bronze
                inner join placeholders
                    on
                        bronze.topic = placeholders.kafka_topic
                        and bronze.`partition` = placeholders.kafka_partition
                        and bronze.`offset` = placeholders.kafka_offset
                where
                    bronze.ingested_at >= timestamp '{{ rows | map(attribute="first_ingested") | min }}'
                    and bronze.ingested_at <= timestamp '{{ rows | map(attribute="last_ingested") | max }}'
                    and bronze.topic in ({{ cdc_sql_list(topics) }})

            ),

            {{ cdc_parsed_rows('leftover_records', plan, fast=false) }}

            select * from final
        ) as parsed
            {#- by coordinates, not record_id: a placeholder written before ids were coordinates
                (a sha256) is still replaced #}
            on
                stored.record_kind = 'quarantine'
                and stored.kafka_topic = parsed.kafka_topic
                and stored.kafka_partition = parsed.kafka_partition
                and stored.kafka_offset = parsed.kafka_offset
                and stored.row_index = parsed.row_index
        when matched then update set *
        when not matched then insert *
    {%- endset -%}
    {#- run here, not returned as the hook's statement: the record needs the MERGE's commit -#}
    {%- do run_query(merge) -%}
    {%- set merged = cdc_last_commit(this, written=true, marked=false) -%}
    {%- do cdc_remember_commit(this, merged) -%}
    {{ return(_cdc_leftovers_taken(_cdc_commit_digest(merged))) }}
{%- endmacro %}

{% macro _cdc_leftovers_taken(commit_digest) -%}
    {#- the statement that records silver's newest commit (its digest) as one after which no
        placeholder is left: cdc_parse_leftovers skips its look while it stays the newest -#}
    {%- if commit_digest is none -%}
        {{ return('') }}
    {%- endif -%}
    {{ return('alter database ' ~ this.schema ~ ' set dbproperties ('
        ~ cdc_sql_string('cdc.leftovers_taken') ~ ' = ' ~ cdc_sql_string(commit_digest) ~ ')') }}
{%- endmacro %}

{% macro _cdc_commit_digest(commit) -%}
    {#- an md5 of a commit's id (cdc_last_commit), none when the table has none -#}
    {{ return(local_md5(tojson(commit.id)) if commit.id is not none else none) }}
{%- endmacro %}
