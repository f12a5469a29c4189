{% macro cdc_watermark(column='ingested_at') -%}
    {#-
        SQL for "the newest `column` already in this incremental model", as a literal read at
        compile time: Delta skips every file of the upstream table whose statistics say it holds
        nothing newer, which it cannot do with a scalar subquery in the filter. Outside
        execution (parsing, docs, lint) the subquery itself is returned.
    -#}
    {%- set fallback = "timestamp '1970-01-01'" -%}
    {%- if not execute -%}
        {{ return('(select coalesce(max(' ~ column ~ '), ' ~ fallback ~ ') from ' ~ this ~ ')') }}
    {%- endif -%}
    {%- set newest = run_query('select cast(max(' ~ column ~ ') as string) as newest from ' ~ this).rows[0]['newest'] -%}
    {{ return(fallback if newest is none else "timestamp '" ~ newest ~ "'") }}
{%- endmacro %}
