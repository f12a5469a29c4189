{#
    One row per (source table, column): the Spark type its typed gold view gives it, decided
    from the vendor type metadata (gold.cdc_table_columns) or the cdc_column_type_overrides
    seed. The post-hook (re)creates the views gold.<database>__<table> and
    gold.<database>__<table>__history from these types, so a column added at the source
    appears in its view on the next build. The table is written again only when its rows
    would change (cdc_table_if_changed): a build whose changes bring no new column or type
    leaves it, and its views, as they are.
#}

-- depends_on: {{ ref('cdc_table_columns') }}
-- depends_on: {{ ref('cdc_column_type_overrides') }}
-- depends_on: {{ ref('cdc_current_state') }}
-- depends_on: {{ ref('cdc_history') }}
-- depends_on: {{ ref('cdc_history_versions') }}

{{ config(
    materialized='cdc_table_if_changed',
    post_hook="{{ cdc_create_typed_views() }}",
) }}

{#- while the table columns, the overrides seed and the code are what the last build that
    created the views recorded (macros/gold/cdc_typed_specs_key.sql), the table and its views
    are left as they are, and the table columns are not read: the materialization and the
    post-hook are told so (cdc_hand_over). A build or run only: `dbt compile` and the docs show
    the model's SQL #}
{%- set specs_key = cdc_typed_specs_key() if flags.WHICH in ('build', 'run') and not should_full_refresh() else none %}
{%- set stored = adapter.get_relation(this.database, this.schema, this.identifier) if specs_key is not none else none %}
{%- if stored is not none and stored.is_table and cdc_typed_specs_recorded(specs_key) %}
{%- do cdc_hand_over('unchanged', 'its inputs are those of cdc.typed_specs in gold') %}
{%- do cdc_log_plan('the table columns and type overrides are those its views were made from: nothing written') %}
{%- do cdc_hand_over('typed_column_specs', {'unchanged': true}) %}

select * from {{ this }}

{%- else %}
{%- set specs = cdc_typed_column_specs() %}
{%- do cdc_log_plan('types decided again from the table columns: the table and the views whose types moved are written again') %}
{#- the post-hook that creates the views takes the same specs, without asking again, and the
    key to record with them #}
{%- do cdc_hand_over('typed_column_specs', {'specs': specs, 'key': specs_key}) %}

with typed_columns as (

    {#- one inline table, not a union of one-row selects: Spark analyses a union of hundreds of
        branches for tens of seconds #}
    select * from values
    {%- for spec in specs %}
        (
            {{ cdc_sql_string(spec.source_format) }},
            {{ cdc_sql_string(spec.source_database) }},
            {{ cdc_sql_string(spec.source_schema) }},
            {{ cdc_sql_string(spec.source_table) }},
            {{ cdc_sql_string(spec.view_name) }},
            {{ loop.index }},
            {{ cdc_sql_string(spec.column_name) }},
            {{ cdc_sql_string(spec.spark_type) }},
            {{ cdc_sql_string(spec.previous_spark_type) }},
            {{ cdc_sql_string(spec.vendor_type) }}
        ),
    {%- endfor %}
        (
            cast(null as string), cast(null as string), cast(null as string), cast(null as string),
            cast(null as string), cast(null as int), cast(null as string), cast(null as string),
            cast(null as string), cast(null as string)
        )
    as specs (
        source_format, source_database, source_schema, source_table, view_name, column_position,
        column_name, spark_type, previous_spark_type, vendor_type
    )

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
{%- endif %}
