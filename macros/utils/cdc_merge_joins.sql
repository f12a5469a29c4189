{#
    How Spark joins a MERGE's source to the files it rewrites. Delta's MERGE, with deletion
    vectors and both an update and an insert clause, writes its changes through a left outer
    join of the source with every row of the touched files: the source is the side kept, so
    Spark cannot broadcast it, and it shuffles and sorts both sides. The touched files of
    gold.cdc_history_versions' MERGEs (the settling's, a late change's) are its whole open
    partition (every key's latest version, with its row image: each file holds every key),
    sorted to meet a source of a few thousand ended versions and closers.

    So the MERGE hashes instead of sorting, when Spark's adaptive execution finds every shuffled
    partition of the side it builds from under 64 MB: a small source then needs no sort of the
    large side, and a history too large for that keeps the sort-merge join, so a task's memory
    stays bounded.

    The settings are the session's: on the session method dbt's threads share one, so a model
    running beside the MERGE (the table columns) plans with them too for that while; its plans
    may differ, never its rows.
#}

{% macro cdc_merge_by_hash_join() -%}
    {#- At compile time, in a model whose run is about to MERGE: the session's joins by hash
        for its statements (no preference for the sort-merge join; the shuffled hash join under
        64 MB a partition), handed over (cdc_hand_over) to the post-hook
        cdc_forget_merge_hash_join, which puts them back. Nothing outside execution. -#}
    {%- if execute -%}
        {%- set settings = {
            'spark.sql.join.preferSortMergeJoin': 'false',
            'spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold': '64m',
        } -%}
        {%- for key, value in settings.items() -%}
            {%- do run_query('set ' ~ key ~ ' = ' ~ value) -%}
        {%- endfor -%}
        {%- do cdc_hand_over('merge_join_settings', settings) -%}
    {%- endif -%}
{%- endmacro %}

{% macro cdc_forget_merge_hash_join() -%}
    {#- Post-hook: the settings cdc_merge_by_hash_join set in this run, reset to the session's
        own (a setting the cluster gives keeps the cluster's value). A run that set none (a
        build with nothing new) sends no statement. -#}
    {%- set settings = cdc_handed('merge_join_settings') -%}
    {%- for key in settings or {} -%}
        {%- do run_query('reset ' ~ key) -%}
    {%- endfor -%}
    {{ return('') }}
{%- endmacro %}
