{% macro cdc_detect_format(value_text) -%}
    {#-
        The format of a message whose topic has none configured, from its shape alone. Returns
        null when the shape says nothing (silver quarantines it as "unknown format") and
        'ambiguous:<ids>' for look-alikes that cannot be told apart (canal-json, drs-json and
        drs-json-c share one shape), so that the quarantine reason names the candidates.
    -#}
    case
        when {{ value_text }} is null then null
        when get_json_object({{ value_text }}, '$.payload.op') is not null
            or get_json_object({{ value_text }}, '$.payload.ddl') is not null
            then 'debezium-json'
        when get_json_object({{ value_text }}, '$.op') is not null
            and get_json_object({{ value_text }}, '$.source') is not null
            then 'debezium-flat'
    end
{%- endmacro %}
