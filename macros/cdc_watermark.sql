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

{% macro cdc_new_change_counts(changes, watermark) -%}
    {#-
        What the changes newer than `watermark` (SQL from cdc_watermark) hold, read at compile
        time: {'changes': how many, 'truncations': how many truncates}; none outside execution
        and on a first run (no watermark), when a model must assume anything. A query over the
        new files of silver only (Delta skips the rest by ingested_at). Gold uses it to compile
        its truncation branch as empty when there is no truncate (Spark then drops the scan of
        the stored keys that only a truncate needs) and to broadcast the keys of a small
        increment instead of shuffling every stored version to meet them.
    -#}
    {%- if not execute or watermark is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set row = run_query(
        "select count(*) as changes, count_if(op = 't') as truncations from " ~ changes
        ~ " where ingested_at > " ~ watermark
    ).rows[0] -%}
    {{ return({'changes': row['changes'], 'truncations': row['truncations']}) }}
{%- endmacro %}
