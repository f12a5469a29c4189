{#
    One row per (source table, column): the Spark type its typed gold view gives it, decided
    from the vendor type metadata (gold.cdc_table_columns) or the cdc_column_type_overrides
    seed. The post-hook (re)creates the views gold.<database>__<table> and
    gold.<database>__<table>__history from these types, so a column added at the source
    appears in its view on the next build.
#}

-- depends_on: {{ ref('cdc_table_columns') }}
-- depends_on: {{ ref('cdc_column_type_overrides') }}
-- depends_on: {{ ref('cdc_key_state') }}
-- depends_on: {{ ref('cdc_history') }}

{{ config(
    materialized='table',
    post_hook="{{ cdc_create_typed_views() }}",
) }}

{%- set specs = cdc_typed_column_specs() %}

with typed_columns as (

    {%- for spec in specs %}
    select
        {{ cdc_sql_string(spec.source_format) }} as source_format,
        {{ cdc_sql_string(spec.source_database) }} as source_database,
        {{ cdc_sql_string(spec.source_schema) }} as source_schema,
        {{ cdc_sql_string(spec.source_table) }} as source_table,
        {{ cdc_sql_string(spec.view_name) }} as view_name,
        {{ loop.index }} as column_position,
        {{ cdc_sql_string(spec.column_name) }} as column_name,
        {{ cdc_sql_string(spec.spark_type) }} as spark_type,
        {{ cdc_sql_string(spec.previous_spark_type) }} as previous_spark_type,
        {{ cdc_sql_string(spec.vendor_type) }} as vendor_type
    union all
    {%- endfor %}
    select
        cast(null as string) as source_format,
        cast(null as string) as source_database,
        cast(null as string) as source_schema,
        cast(null as string) as source_table,
        cast(null as string) as view_name,
        cast(null as int) as column_position,
        cast(null as string) as column_name,
        cast(null as string) as spark_type,
        cast(null as string) as previous_spark_type,
        cast(null as string) as vendor_type

),

final as (

    select
        *,
        case
            when previous_spark_type is null or previous_spark_type = spark_type then null
            when previous_spark_type in ('int') and spark_type in ('bigint', 'decimal(20,0)', 'double', 'string') then 'widened'
            when previous_spark_type in ('float') and spark_type in ('double', 'string') then 'widened'
            when spark_type = 'string' then 'widened'
            else 'changed'
        end as type_change
    from typed_columns
    where column_name is not null

)

select * from final
