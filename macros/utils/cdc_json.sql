{#
    Exact JSON handling.

    Spark's JSON readers (from_json, get_json_object) turn JSON numbers into doubles, and VARIANT
    keeps at most 38 digits. CDC values must round-trip exactly (integers beyond 64 bits, DECIMAL
    up to 65 digits), so before parsing, every bare number and boolean of a message is rewritten
    into a *marked string*: the JSON string "\u0000<original token>". Parsing then only ever sees
    strings, which Spark keeps verbatim; cdc_unmark_json turns marked strings back into the
    original tokens when an image is written out as JSON text.
#}

{% macro cdc_json_token_pattern() -%}
    {#- A bare JSON number or boolean, as a regex group: what cdc_mark_json marks and all that
        cdc_unmark_json unquotes again. -#}
    {{ return('(-?[0-9][0-9.eE+-]*+|true|false)') }}
{%- endmacro %}

{% macro cdc_jvm_functions(portable=false) -%}
    {#- True when the marking runs as the project's JVM functions (jvm/functions: the
        `cdc_lakehouse` function catalog every session of the lakehouse is configured with)
        rather than as the regular expressions below, which give the same text much more
        slowly. The `cdc_jvm_functions` var (default true) turns them off for a Spark that
        lacks the jar; `portable` SQL (the bodies of the typed gold views, which any Spark
        reading the metastore may query) always takes the regular expressions. -#}
    {{ return(not portable and var('cdc_jvm_functions', true) not in (false, 'false')) }}
{%- endmacro %}

{% macro cdc_mark_json(text, portable=false) -%}
    {#-
        One pass where it can: string literals are matched whole (possessive quantifiers: no
        regex backtracking on long strings) and left as they are, bare tokens become marked
        strings; the replacement appends the marker's empty shell "\u0000" to every string
        literal, and a plain (non-regex) replace removes those shells again. A message that
        itself holds the text "\u0000" (a JSON string of one escaped NUL) would lose it to that
        replace: it takes three passes instead. 1: strings are followed by two \u0001, bare
        tokens wrapped in \u0001; 2: the doubled \u0001 after strings is dropped; 3: wrapped
        tokens become marked strings. Raw control characters cannot occur in valid JSON, so
        \u0001 is a safe sentinel. Both give the same text; the single pass is cheaper, so it is
        taken wherever it is safe.
    -#}
    {%- if cdc_jvm_functions(portable) %}
    {#- JsonMarks.mark gives this very text, but for invalid JSON in a message that holds
        "\u0000": there the three passes would join adjacent tokens (`1true`) into one string -#}
    cdc_lakehouse.json.mark({{ text }})
    {%- else -%}
    {%- set strings_or_tokens -%}
        ("[^"\\\\]*+(?:\\\\.[^"\\\\]*+)*+")|{{ cdc_json_token_pattern() }}
    {%- endset -%}
    case
        when instr({{ text }}, '"\\u0000"') = 0 then replace(
            regexp_replace({{ text }}, '{{ strings_or_tokens }}', '$1"\\\\u0000$2"'),
            '"\\u0000"',
            ''
        )
        else regexp_replace(
            regexp_replace(
                regexp_replace({{ text }}, '{{ strings_or_tokens }}', '$1\u0001$2\u0001'),
                '\u0001\u0001',
                ''
            ),
            '\u0001([^\u0001]*+)\u0001',
            '"\\\\u0000$1"'
        )
    end
    {%- endif %}
{%- endmacro %}

{% macro cdc_unmark_json(text, portable=false) -%}
    {#- JSON text with marked strings -> the original JSON text, numbers exact. Only a marked
        number or boolean is unquoted: a genuine string that begins with U+0000 (MySQL geometry
        values in Paimon's all-types sample, a string of one NUL) looks like a marked value once
        parsed, and unquoting it would write invalid JSON. -#}
    {%- if cdc_jvm_functions(portable) %}
    cdc_lakehouse.json.unmark({{ text }})
    {%- else %}
    regexp_replace({{ text }}, '"\\\\u0000{{ cdc_json_token_pattern() }}"', '$1')
    {%- endif %}
{%- endmacro %}

{% macro cdc_unmark_value(value) -%}
    {#- One marked value (a map value of a parsed image) -> its exact text. -#}
    {#- not a regular expression: this runs for most fields of every message -#}
    case when left({{ value }}, 1) = '\u0000' then substr({{ value }}, 2) else {{ value }} end
{%- endmacro %}

{% macro cdc_image_map(marked_json) -%}
    {#- A marked JSON object -> map<string,string> of marked values, in message order. -#}
    from_json({{ marked_json }}, 'map<string,string>')
{%- endmacro %}

{% macro cdc_map_to_json(value_map) -%}
    {#- A map of marked values -> exact JSON object text (numbers unquoted again). -#}
    {{ cdc_unmark_json('to_json(' ~ value_map ~ ')') }}
{%- endmacro %}

{% macro cdc_utf8_text(bytes) -%}
    {#- Binary -> its text when it is valid UTF-8, else null (null stays null). The JVM
        function tests the (nearly always ASCII) bytes eight at a time and leaves the rest to
        Spark's own check, which alone was a tenth of the parse's time. -#}
    {%- if cdc_jvm_functions() -%}
    cdc_lakehouse.json.utf8_text({{ bytes }})
    {%- else -%}
    case when is_valid_utf8(cast({{ bytes }} as string)) then cast({{ bytes }} as string) end
    {%- endif -%}
{%- endmacro %}

{% macro cdc_image_shape(image) -%}
    {#- A JSON object text -> its shape: a JSON object with the same members in the same order,
        each null where the image's is and 1 elsewhere, so that from_json(shape,
        'map<string,string>') has the image's keys and nulls. Images that share their columns
        share a shape, and a model that needs only which columns an image has groups by the
        shape before parsing anything. The JVM function (JsonShapes) scans the bytes once; the
        regular SQL parses the image into a map and writes the shape back: the same text for
        strict JSON, and whatever Spark's reader makes of anything else. -#}
    {%- if cdc_jvm_functions() %}
    cdc_lakehouse.json.shape({{ image }})
    {%- else %}
    to_json(transform_values(from_json({{ image }}, 'map<string,string>'), (col, val) -> case when val is not null then 1 end))
    {%- endif %}
{%- endmacro %}
