{% macro cdc_apply_order(phase, sequence_parts, partition, offset, row_index) -%}
    {#-
        The total order in which changes of one key are applied (SPEC rule 2), as a string that
        sorts correctly: phase (0 = full load before 1 = incremental), up to three parts of the
        vendor's own sequence (digit strings, e.g. binlog file number, position, row), then
        Kafka partition and offset, then the position inside a multi-row message. A part that
        is absent or not all digits counts as 0.

        Each part is written as its digit count (two digits) and its digits, without leading
        zeros: a longer number is a larger one, so the count decides first and the digits of
        numbers of one length compare as numbers, and the next part starts at the same place
        in both strings. About 40 characters where padding every part to its widest (38
        digits for a vendor part) took 161: every window, join and MERGE of gold sorts and
        compares this string, and Delta's statistics keep only its first 32 characters.
        cdc_apply_order_layout() names this layout; a table written in the padded one asks for
        a full refresh (cdc_watermark).
    -#}
    concat_ws(
        '.',
        cast({{ phase }} as string),
        {%- for i in range(3) %}
            {%- set part = sequence_parts[i] if i < sequence_parts | length else none %}
            {%- if part is none %}
        '010',
            {%- else %}
        {{ _cdc_order_part("coalesce(nullif(regexp_extract(cast(" ~ part ~ " as string), '^0*([0-9]{1,38})$', 1), ''), '0')") }},
            {%- endif %}
        {%- endfor %}
        {{ _cdc_order_part('cast(' ~ partition ~ ' as string)') }},
        {{ _cdc_order_part('cast(' ~ offset ~ ' as string)') }},
        {{ _cdc_order_part('cast(' ~ row_index ~ ' as string)') }}
    )
{%- endmacro %}

{% macro _cdc_order_part(digits) -%}
    {#- A part of an apply order: the digit count of `digits` (SQL of a digit string without
        leading zeros, or null) as two digits, then the digits. -#}
    concat(lpad(cast(length({{ digits }}) as string), 2, '0'), {{ digits }})
{%- endmacro %}

{% macro cdc_apply_order_layout() -%}
    {#- The layout of apply orders this version writes, recorded with every watermark
        (cdc_record_watermark): 2, digit counts and digits (1 was every part zero-padded). -#}
    {{ return(2) }}
{%- endmacro %}

{% macro cdc_is_padded_apply_order(value) -%}
    {#- True when `value` (a stored apply order, a string) is in the first, zero-padded layout. -#}
    {{ return(value is string and modules.re.match('^[01](\\.[0-9]{38}){3}\\.[0-9]{10}\\.[0-9]{20}\\.[0-9]{10}$', value) is not none) }}
{%- endmacro %}

{% macro cdc_same_vendor_position(order, other) -%}
    {#- True when two apply orders of this layout share a vendor position: the phase and the
        three parts of the vendor's sequence, not all of them absent ('010', a zero). A change
        at a stored change's position may be its replay at a later Kafka offset. -#}
    {%- set parts = order.split('.')[:4] -%}
    {{ return(parts == other.split('.')[:4] and parts[1:] != ['010', '010', '010']) }}
{%- endmacro %}

{% macro cdc_epoch_to_timestamp(value) -%}
    {#- Epoch seconds or milliseconds (vendors differ) -> timestamp; below 1e11 counts as seconds. -#}
    case
        when {{ value }} is null then null
        when abs(cast({{ value }} as decimal(38, 6))) < 100000000000
            then timestamp_millis(cast(cast({{ value }} as decimal(38, 6)) * 1000 as bigint))
        else timestamp_millis(cast(cast({{ value }} as decimal(38, 6)) as bigint))
    end
{%- endmacro %}
