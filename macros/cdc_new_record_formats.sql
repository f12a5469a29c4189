{% macro cdc_new_record_formats(incremental) -%}
    {#-
        What silver.cdc_parsed is about to read, asked at compile time: {'formats': the format
        ids the new bronze records resolve to (given at ingest, else from the cdc_topic_formats
        seed), or none when some record must be detected from its shape (then every parser is
        needed); 'up_to': the newest ingested_at among them; 'none_new': true when there is none.
        Outside execution (parsing, docs, lint) every parser is compiled in.
    -#}
    {%- set result = {'formats': none, 'up_to': none, 'none_new': false} -%}
    {%- set bronze = source('bronze', 'kafka_records') -%}
    {%- if not execute or adapter.get_relation(bronze.database, bronze.schema, bronze.identifier) is none -%}
        {{ return(result) }}
    {%- endif -%}
    {%- set query -%}
        select
            coalesce(rec.format, routes.seeded_format, '<detect>') as resolved_format,
            cast(max(rec.ingested_at) as string) as up_to
        from (
            select topic, format, ingested_at from {{ bronze }}
            {%- if incremental %}
            where ingested_at > (select coalesce(max(ingested_at), timestamp '1970-01-01') from {{ this }})
            {%- endif %}
        ) as rec
        left join (
            select topics.topic, max_by(patterns.format, length(patterns.topic_pattern)) as seeded_format
            from (select distinct topic from {{ bronze }}) as topics
            inner join {{ ref('cdc_topic_formats') }} as patterns
                on topics.topic rlike patterns.topic_pattern
            group by topics.topic
        ) as routes
            on rec.topic = routes.topic
        group by 1
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {%- set formats = [] -%}
    {%- set stamps = [] -%}
    {%- for row in rows -%}
        {%- do formats.append(row['resolved_format']) -%}
        {%- do stamps.append(row['up_to']) -%}
    {%- endfor -%}
    {%- do result.update({
        'formats': none if '<detect>' in formats else formats,
        'up_to': (stamps | max) if stamps else none,
        'none_new': not stamps,
    }) -%}
    {{ return(result) }}
{%- endmacro %}
