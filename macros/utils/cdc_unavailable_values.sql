{#
    Debezium's placeholder for a value it does not have: PostgreSQL does not send an unchanged
    TOASTed column with an UPDATE (default replica identity), and Debezium writes the
    `unavailable.value.placeholder` there instead (default `__debezium_unavailable_value`), in
    a form that fits the column's type (debezium-connector-postgres, UnchangedToastedPlaceholder):
    the text itself (strings, json, xml, hex binary), its bytes in base64 (bytea), a one-element
    array (text[], bytea[], uuid[]: the name-based UUID of its bytes), an array of its byte
    values (int[] / bigint[]) and a one-entry map (hstore). The placeholder is never data: gold
    gives the column the value it had in the key's previous version (cdc_history_versions).
    The var `cdc_unavailable_value_placeholder` names a placeholder configured otherwise.
#}

{% macro cdc_unavailable_placeholders() -%}
    {#- Every text an image value may have when it is the placeholder: the after-image map's
        values (cdc_image_map) with marked numbers unmarked, as SQL string literals. -#}
    {%- set text = var('cdc_unavailable_value_placeholder', '__debezium_unavailable_value') -%}
    {%- set ascii = ' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~' -%}
    {%- set byte_values = [] -%}
    {%- for ch in text -%}{%- do byte_values.append(ascii.find(ch) + 32) -%}{%- endfor -%}
    {#- java.util.UUID.nameUUIDFromBytes: the MD5 of the bytes, version 3, IETF variant -#}
    {%- set md5 = local_md5(text) -%}
    {%- set variant = '%x' | format((('0x' ~ md5[16]) | int(base=16)) % 4 + 8) -%}
    {%- set hex = md5[0:12] ~ '3' ~ md5[13:16] ~ variant ~ md5[17:32] -%}
    {%- set uuid = hex[0:8] ~ '-' ~ hex[8:12] ~ '-' ~ hex[12:16] ~ '-' ~ hex[16:20] ~ '-' ~ hex[20:32] -%}
    {%- set base64 = "base64(encode(" ~ cdc_sql_string(text) ~ ", 'utf-8'))" -%}
    {{ return([
        cdc_sql_string(text),
        base64,
        cdc_sql_string('["' ~ text ~ '"]'),
        "concat('[\"', " ~ base64 ~ ", '\"]')",
        cdc_sql_string('["' ~ uuid ~ '"]'),
        cdc_sql_string('[' ~ byte_values | join(',') ~ ']'),
        cdc_sql_string('{"' ~ text ~ '":"' ~ text ~ '"}'),
    ]) }}
{%- endmacro %}

{% macro cdc_unavailable_columns(source_format, after_values, after_image) -%}
    {#- SQL: the columns of a Debezium after image that hold the placeholder (null for other
        formats). The substring test keeps the per-column check off images that cannot hold
        one (every placeholder form above contains the text, its base64 or its first bytes). -#}
    {%- set text = var('cdc_unavailable_value_placeholder', '__debezium_unavailable_value') -%}
    {%- set placeholders = cdc_unavailable_placeholders() -%}
    case
        when {{ source_format }} like 'debezium%' and (
            instr({{ after_image }}, {{ placeholders[0] }}) > 0
            or instr({{ after_image }}, {{ placeholders[1] }}) > 0
            or instr({{ after_image }}, {{ placeholders[4] }}) > 0
            or instr({{ after_image }}, {{ placeholders[5] }}) > 0
        )
            then map_keys(map_filter(
                {{ after_values }},
                (col, val) -> {{ cdc_unmark_json('val', portable=true) }} in ({{ placeholders | join(', ') }})
            ))
        else cast(array() as array<string>)
    end
{%- endmacro %}
