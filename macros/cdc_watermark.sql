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

{% macro cdc_new_change_counts(changes, watermark, latest_versions=none) -%}
    {#-
        What the changes newer than `watermark` (SQL from cdc_watermark) hold, read at compile
        time: {'changes': how many, 'truncations': how many truncates}; none outside execution
        and on a first run (no watermark), when a model must assume anything. A query over the
        new files of silver only (Delta skips the rest by ingested_at). Gold uses it to compile
        its truncation branch as empty when there is no truncate (Spark then drops the scan of
        the stored keys that only a truncate needs) and to broadcast the keys of a small
        increment instead of shuffling every stored version to meet them.

        With `latest_versions` (SQL of a relation: source_database, source_schema, source_table,
        pk, apply_order of each key's latest stored change) also 'late', in the same query: how
        many keys (a key-changing update's old key included) get a change older than their
        latest stored one, a late arrival or a replay. With none, a model whose stored rows only
        a later change can touch may read and MERGE those latest rows alone.
    -#}
    {%- if not execute or watermark is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set query -%}
        with new_changes as (
            select * from {{ changes }}
            where ingested_at > {{ watermark }}
        )
        select counts.*{% if latest_versions is not none %}, late_keys.late{% endif %}
        from (select count(*) as changes, count_if(op = 't') as truncations from new_changes) as counts
        {%- if latest_versions is not none %}
        cross join (
            select count(*) as late
            from (
                select source_database, source_schema, source_table, pk, min(apply_order) as first_new_order
                from (
                    select source_database, source_schema, source_table, pk, apply_order
                    from new_changes
                    where op in ('c', 'u', 'r', 'd')
                    union all
                    select source_database, source_schema, source_table, before_pk as pk, apply_order
                    from new_changes
                    where op = 'u' and before_pk is not null
                ) as touched
                group by source_database, source_schema, source_table, pk
            ) as new_keys
            inner join {{ latest_versions }} as latest
                on
                    new_keys.source_database <=> latest.source_database
                    and new_keys.source_schema <=> latest.source_schema
                    and new_keys.source_table = latest.source_table
                    and new_keys.pk = latest.pk
                    and new_keys.first_new_order < latest.apply_order
        ) as late_keys
        {%- endif %}
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {%- set counts = {'changes': row['changes'], 'truncations': row['truncations']} -%}
    {%- if latest_versions is not none -%}
        {%- do counts.update({'late': row['late']}) -%}
    {%- endif -%}
    {{ return(counts) }}
{%- endmacro %}
