{% macro cdc_history_increment(changes, history, watermark) -%}
    {#-
        What the changes newer than `watermark` mean for `history` (gold.cdc_history), read at
        compile time in one query: {'changes': how many, 'truncations': how many truncates,
        'late': how many keys get a change older than their open (latest stored) version, a
        late arrival or a replay of an older change}; none outside execution and on a first run.
        Without truncates and late keys only open versions can get a new end, so the model
        reads and MERGEs the open partition alone. Reads the new files of silver and the key
        columns of the open partition.
    -#}
    {%- if not execute or watermark is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set query -%}
        with new_changes as (
            select op, source_database, source_schema, source_table, pk, before_pk, apply_order
            from {{ changes }}
            where ingested_at > {{ watermark }}
        ),
        new_keys as (
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
        ),
        late_keys as (
            select count(*) as late
            from new_keys
            inner join {{ history }} as open_versions
                on
                    open_versions.is_open
                    and new_keys.source_database <=> open_versions.source_database
                    and new_keys.source_schema <=> open_versions.source_schema
                    and new_keys.source_table = open_versions.source_table
                    and new_keys.pk = open_versions.pk
                    and new_keys.first_new_order < open_versions.apply_order
        )
        select
            (select count(*) from new_changes) as changes,
            (select count_if(op = 't') from new_changes) as truncations,
            (select late from late_keys) as late
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {{ return({'changes': row['changes'], 'truncations': row['truncations'], 'late': row['late']}) }}
{%- endmacro %}
