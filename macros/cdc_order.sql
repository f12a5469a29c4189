{% macro cdc_apply_order(phase, sequence_parts, partition, offset, row_index) -%}
    {#-
        The total order in which changes of one key are applied (SPEC rule 2), as a string that
        sorts correctly: phase (0 = full load before 1 = incremental), up to three parts of the
        vendor's own sequence (digit strings, e.g. binlog file number, position, row), then
        Kafka partition and offset, then the position inside a multi-row message. Each part is
        left-padded to a fixed width; a part that is absent or not all digits counts as 0.
    -#}
    concat_ws(
        '.',
        cast({{ phase }} as string),
        {%- for i in range(3) %}
            {%- set part = sequence_parts[i] if i < sequence_parts | length else none %}
            {%- if part is none %}
        repeat('0', 38),
            {%- else %}
        lpad(coalesce(nullif(regexp_extract(cast({{ part }} as string), '^0*([0-9]{1,38})$', 1), ''), '0'), 38, '0'),
            {%- endif %}
        {%- endfor %}
        lpad(cast({{ partition }} as string), 10, '0'),
        lpad(cast({{ offset }} as string), 20, '0'),
        lpad(cast({{ row_index }} as string), 10, '0')
    )
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
