{% macro cdc_nothing_to_write() -%}
    {#-
        Placed in an incremental model's SQL when the model knows at compile time that its run
        has nothing to write (no record or change newer than its watermark): the run skips its
        INSERT or MERGE (dbt_spark_get_incremental_sql below), because Spark would otherwise plan
        the model's whole query and Delta run its MERGE's jobs for an empty source. Such a write
        commits nothing anyway, so the table is the same either way. The
        temporary view of the model's query is still created, so that a new column of the
        model reaches the table (on_schema_change) with or without new rows. A comment, so the
        model's query is unchanged.
    -#}
    /* cdc_nothing_to_write */
{%- endmacro %}

{% macro cdc_append() -%}
    {#-
        Placed in an incremental model's SQL when the model knows at compile time that its run
        only adds rows (gold.cdc_history_versions' in-order increments): the run appends its
        query's rows (an INSERT) instead of the MERGE of its configured strategy
        (dbt_spark_get_incremental_sql below). dbt reads config() at parse time only, so a
        strategy cannot be chosen by what the compile read. A comment, so the model's query is
        unchanged.
    -#}
    /* cdc_append */
{%- endmacro %}

{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) -%}
    {#- dbt-spark's statement of an incremental run (this project's version takes precedence),
        a statement that writes nothing when the model's SQL says so (cdc_nothing_to_write), or
        an append in place of the MERGE (cdc_append) -#}
    {%- if '/* cdc_nothing_to_write */' in ((model or {}).get('compiled_code') or '') -%}
        select 'nothing new for {{ target }}' as skipped_write
    {%- elif '/* cdc_append */' in ((model or {}).get('compiled_code') or '') -%}
        {{ dbt.dbt_spark_get_incremental_sql('append', source, target, existing, unique_key, incremental_predicates) }}
    {%- else -%}
        {{ dbt.dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) }}
    {%- endif -%}
{%- endmacro %}
