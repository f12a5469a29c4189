{% macro cdc_route_records(records) -%}
    {#-
        Bronze records -> the same records with `resolved_format` (the format given at ingest,
        else the most specific matching pattern of the cdc_topic_formats seed, else detected
        from the message) and the value and key decoded as UTF-8 once (null when not UTF-8).
        Patterns are matched per distinct topic, not per record.
    -#}
    select
        rec.*,
        coalesce(rec.format, routes.seeded_format, {{ cdc_detect_format('rec.value_text') }})
            as resolved_format
    from (
        select
            r.*,
            is_valid_utf8(cast(r.value as string)) as value_is_utf8,
            case when is_valid_utf8(cast(r.value as string)) then cast(r.value as string) end
                as value_text,
            case when is_valid_utf8(cast(r.key as string)) then cast(r.key as string) end
                as key_text
        from {{ records }} as r
    ) as rec
    left join (
        select
            topics.topic,
            max_by(patterns.format, length(patterns.topic_pattern)) as seeded_format
        from (select distinct topic from {{ records }}) as topics
        inner join {{ ref('cdc_topic_formats') }} as patterns
            on topics.topic rlike patterns.topic_pattern
        group by topics.topic
    ) as routes
        on rec.topic = routes.topic
{%- endmacro %}
