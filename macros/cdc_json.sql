{#
    Exact JSON handling.

    Spark's JSON readers (from_json, get_json_object) turn JSON numbers into doubles, and VARIANT
    keeps at most 38 digits. CDC values must round-trip exactly (integers beyond 64 bits, DECIMAL
    up to 65 digits), so before parsing, every bare number and boolean of a message is rewritten
    into a *marked string*: the JSON string "\u0000<original token>". Parsing then only ever sees
    strings, which Spark keeps verbatim; cdc_unmark_json turns marked strings back into the
    original tokens when an image is written out as JSON text.
#}

{% macro cdc_mark_json(text) -%}
    {#-
        Three passes. 1: string literals are matched whole (possessive quantifiers: no regex
        backtracking on long strings) and followed by two \u0001; bare tokens are wrapped in
        \u0001. 2: the doubled \u0001 after strings is dropped. 3: wrapped tokens become marked
        strings. Raw control characters cannot occur in valid JSON, so \u0001 is a safe sentinel.
    -#}
    regexp_replace(
        regexp_replace(
            regexp_replace(
                {{ text }},
                '("[^"\\\\]*+(?:\\\\.[^"\\\\]*+)*+")|(-?[0-9][0-9.eE+-]*+|true|false)',
                '$1\u0001$2\u0001'
            ),
            '\u0001\u0001',
            ''
        ),
        '\u0001([^\u0001]*+)\u0001',
        '"\\\\u0000$1"'
    )
{%- endmacro %}

{% macro cdc_unmark_json(text) -%}
    {#- JSON text with marked strings -> the original JSON text, numbers exact. -#}
    regexp_replace({{ text }}, '"\\\\u0000([^"]*+)"', '$1')
{%- endmacro %}

{% macro cdc_unmark_value(value) -%}
    {#- One marked value (a map value of a parsed image) -> its exact text. -#}
    regexp_replace({{ value }}, '^\u0000', '')
{%- endmacro %}

{% macro cdc_image_map(marked_json) -%}
    {#- A marked JSON object -> map<string,string> of marked values, in message order. -#}
    from_json({{ marked_json }}, 'map<string,string>')
{%- endmacro %}

{% macro cdc_map_to_json(value_map) -%}
    {#- A map of marked values -> exact JSON object text (numbers unquoted again). -#}
    {{ cdc_unmark_json('to_json(' ~ value_map ~ ')') }}
{%- endmacro %}
