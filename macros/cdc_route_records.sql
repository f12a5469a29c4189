{% macro cdc_route_records(records, topic_formats=none, detect=true) -%}
    {#-
        Bronze records -> the same records with `resolved_format` (the format given at ingest,
        else the most specific matching pattern of the cdc_topic_formats seed, else detected
        from the message) and the value and key decoded as UTF-8 once (null when not UTF-8).
        Patterns are matched per distinct topic, not per record.

        `topic_formats` (topic -> format id, worked out by cdc_new_records at compile time) is
        looked up first; with `detect` false every record's topic is in it, so neither the seed
        patterns nor the shape are looked at.
    -#}
    {#- one `in` list of topics per format, not a map literal: Spark looks a key up in a map
        literal by comparing it with every key in turn, so each record cost a comparison per
        topic, and it turns an `in` list of more than ten into a hash set, whatever the number
        of topics -#}
    {%- set topics_of_format = {} -%}
    {%- for topic, fmt in (topic_formats or {}).items() -%}
        {%- do topics_of_format.setdefault(fmt, []).append(topic) -%}
    {%- endfor -%}
    {%- set lookup -%}
        {%- if topic_formats -%}
        case
            {%- for fmt, topics in topics_of_format.items() %}
            when rec.topic in ({{ cdc_sql_list(topics | sort) }}) then {{ cdc_sql_string(fmt) }}
            {%- endfor %}
        end
        {%- else -%}
        cast(null as string)
        {%- endif -%}
    {%- endset %}
    select
        rec.*,
        {#- a dump's line that is no Kafka record (lakehouse.file_source) is quarantined with
            what it is, never parsed: its coordinates are a line number, not Kafka's #}
        case when rec.topic = {{ cdc_sql_string(cdc_unrouted_topic()) }} then cast(null as string) else
        {%- if detect %}
        coalesce(
            {{ lookup }},
            rec.format,
            routes.seeded_format,
            {{ cdc_detect_format('rec.value_text') }}
        )
        {%- else %}
        {{ lookup }}
        {%- endif %}
        end as resolved_format,
        {#- a fast parser's row, set by silver where it has one (cdc_fast_parsers) #}
        cast(null as {{ cdc_fast_parse_type() }}) as fast
    from (
        select
            r.*,
            {#- null for a null value, as is_valid_utf8 gives #}
            case when r.value is not null then {{ cdc_utf8_text('r.value') }} is not null end as value_is_utf8,
            case when r.key is not null then {{ cdc_utf8_text('r.key') }} is not null end as key_is_utf8,
            {{ cdc_utf8_text('r.value') }} as value_text,
            {{ cdc_utf8_text('r.key') }} as key_text
        from {{ records }} as r
    ) as rec
    {%- if detect %}
    left join (
        select
            topics.topic,
            max_by(patterns.format, length(patterns.topic_pattern)) as seeded_format
        from (select distinct topic from {{ records }}) as topics
        inner join ({{ cdc_topic_format_patterns() }}) as patterns
            on topics.topic rlike patterns.topic_pattern
        group by topics.topic
    ) as routes
        on rec.topic = routes.topic
    {%- endif %}
{%- endmacro %}


{% macro cdc_unrouted_topic() -%}
    {#- The topic under which `lakehouse ingest --from-file` lands a line that is not a kcat -C -J
        envelope (lakehouse.file_source.UNROUTED_TOPIC), with what it is in a header. -#}
    {{ return('_lakehouse_unrouted') }}
{%- endmacro %}

{% macro cdc_unrouted_reason(headers) -%}
    {#- The reason an unrouted line carries in its header lakehouse.unrouted_reason (written by
        lakehouse.file_source); a loader before that header gave none. -#}
    coalesce(
        cast(try_element_at(filter({{ headers }}, h -> h.key = 'lakehouse.unrouted_reason'), 1).value as string),
        'not a kcat -C -J envelope (a line of a dump file that holds no Kafka record)'
    )
{%- endmacro %}

{% macro cdc_topic_format_patterns() -%}
    {#-
        The topic -> format patterns: the cdc_topic_formats seed plus the `cdc_topic_formats`
        var (a mapping of pattern -> format id), which sets formats for one run or one
        deployment without editing the seed, e.g.
        dbt build --vars '{cdc_topic_formats: {"^shop[.]": canal-json}}'.

        A pattern is a Java regular expression (Spark's rlike). One that does not compile stops
        the query that matches it with a message naming the pattern and where it was given,
        not with Java's PatternSyntaxException and the join that met it: `try_reflect` compiles
        each pattern (a few rows, once per query) and is null when Java refuses it.
    -#}
    select
        case
            when topic_pattern is null or try_reflect('java.util.regex.Pattern', 'compile', topic_pattern) is not null
                then topic_pattern
            else raise_error(concat(
                'the topic pattern "', topic_pattern, '" (', given_in, ') is not a regular expression ',
                'as Java reads them (java.util.regex.Pattern); correct it there'
            ))
        end as topic_pattern,
        format
    from (
        select topic_pattern, format, 'the seed seeds/cdc_topic_formats.csv' as given_in
        from {{ ref('cdc_topic_formats') }}
        {%- for pattern, format_id in (var('cdc_topic_formats', none) or {}).items() %}
        union all
        select
            {{ cdc_sql_string(pattern) }} as topic_pattern,
            {{ cdc_sql_string(format_id) }} as format,
            'the var cdc_topic_formats' as given_in
        {%- endfor %}
    ) as given
{%- endmacro %}

{% macro cdc_topic_format_patterns_version() -%}
    {#- A string that changes whenever the patterns of cdc_topic_format_patterns may: the
        checksum of the CSV the cdc_topic_formats seed was loaded from (its property
        cdc.seed_checksum, cdc_seed_if_changed: the loaded seed's, not the CSV's, which a `dbt run`
        does not load) with the var's patterns. None when the table does not say (not loaded by
        dbt's seed): then nothing is taken as known. -#}
    {%- set seed = ref('cdc_topic_formats') -%}
    {%- set relation = adapter.get_relation(seed.database, seed.schema, seed.identifier) -%}
    {%- set checksum = cdc_table_property(relation, 'cdc.seed_checksum') if relation is not none else none -%}
    {%- if checksum is none or 'does not have property' in checksum -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(local_md5(checksum ~ '\n' ~ tojson(var('cdc_topic_formats', none) or {}))) }}
{%- endmacro %}
