{#
    One row per (source table, column) ever seen in a row image, with the vendor's type
    metadata of its latest change: the schema the typed gold views are generated from.
    A column added at the source appears here with the first change that carries it.
    Incremental MERGE: first_seen_order stays, the type follows the newest change.

    The type comes from the newest change in which the column has a value: formats that type
    each value rather than each column (OMS Avro's precision, scale and charset sit in the
    value's entry) say less about a NULL, and a NULL must not turn decimal(20,4) into a string.
    Only a column that never had a value takes the newest metadata of all.
#}

{#-
    Incremental by a watermark its writes record (cdc_record_watermark): silver's own, read from
    silver's newest commit, which its parse wrote (nothing in silver is newer), with that
    commit's id. A run that finds silver's newest commit still the one recorded has nothing new
    and writes nothing (cdc_nothing_to_write); the others read the changes up to it. Without a
    recorded watermark (silver's newest commit is not its parse's, or a table an earlier version
    wrote), the watermark is the newest last_ingested_at stored, and the read is unbounded:
    reading a change twice changes nothing here.
-#}
{%- set recorded = {} %}
{%- set watermark = cdc_watermark('last_ingested_at', 'last_seen_order', recorded=recorded) if is_incremental() else none %}
{%- set silver_commit = cdc_last_commit(ref('cdc_parsed')) %}
{%- set up_to = silver_commit.mark.ingested_at if silver_commit.mark else none %}
{%- set unchanged = cdc_unchanged_since(recorded, silver_commit) %}
{%- do cdc_record_watermark(up_to, {'upstream': silver_commit.id}) %}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='column_key',
    merge_update_condition='DBT_INTERNAL_SOURCE.last_seen_order > DBT_INTERNAL_DEST.last_seen_order',
    tblproperties={'delta.enableDeletionVectors': 'true'},
    post_hook="{{ cdc_forget_watermark() }}",
) }}

{% if unchanged -%}
{#- nothing new: no MERGE runs (cdc_nothing_to_write), and its source, empty, is the table's
    own columns: Spark analyses this for the MERGE's temporary view, not the query below (0.22 s
    of a build with nothing new at 4M changes) #}
select * from {{ this }}
where false
{{ cdc_nothing_to_write() }}
{%- else -%}
with new_changes as (

    select * from {{ ref('cdc_changes') }}
    where after_image is not null
    {%- if is_incremental() %}
        and {{ cdc_newer_than('ingested_at', watermark) }}
    {%- endif %}
    {%- if up_to is not none %}
        and ingested_at <= timestamp '{{ up_to }}'
    {%- endif %}

),

image_shapes as (

    {#- millions of changes share a handful of shapes per table (the same columns, types and
        null columns): an image's shape (cdc_image_shape: its columns in order, null or not) is
        taken in one pass over its text, and changes are grouped by it before anything is
        parsed #}
    select
        source_format,
        source_database,
        source_schema,
        source_table,
        column_types,
        image_shape,
        min(apply_order) as first_order,
        max(apply_order) as last_order,
        max(ingested_at) as last_ingested_at
    from (
        select
            *,
            {{ cdc_image_shape('after_image') }} as image_shape
        from new_changes
    ) as shaped
    group by source_format, source_database, source_schema, source_table, column_types, image_shape

),

change_shapes as (

    {#- each shape parsed once: its columns in message order and those without a value #}
    select
        source_format,
        source_database,
        source_schema,
        source_table,
        column_types,
        map_keys(shape_values) as column_names,
        map_keys(map_filter(shape_values, (col, val) -> val is null)) as null_columns,
        first_order,
        last_order,
        last_ingested_at
    from (
        select
            *,
            from_json(image_shape, 'map<string,string>') as shape_values
        from image_shapes
    ) as parsed

),

image_columns as (

    {#- `outer`, and the shapes without columns dropped after it: for a plain posexplode Spark
        infers a filter (the array is not empty) and pushes it below the grouping into the scan,
        where it parsed the shape of every change, not of every distinct shape (4M changes,
        warm: 11.0 s with it, 3.3 s without) #}
    select
        change_shapes.source_format,
        change_shapes.source_database,
        change_shapes.source_schema,
        change_shapes.source_table,
        image_column.pos as column_position,
        image_column.col as column_name,
        from_json(change_shapes.column_types, 'map<string,string>')[image_column.col] as type_json,
        not array_contains(change_shapes.null_columns, image_column.col) as has_value,
        change_shapes.first_order,
        change_shapes.last_order,
        change_shapes.last_ingested_at
    from change_shapes
    lateral view outer posexplode(change_shapes.column_names) image_column as pos, col
    where image_column.col is not null

),

per_column as (

    select
        source_database,
        source_schema,
        source_table,
        column_name,
        max_by(source_format, last_order) as source_format,
        {#- max_by / min_by skip rows whose ordering value is null: the shapes without a value #}
        coalesce(
            max_by(type_json, case when has_value then last_order end), max_by(type_json, last_order)
        ) as type_json,
        coalesce(
            min_by(type_json, case when has_value then first_order end), min_by(type_json, first_order)
        ) as first_type_json,
        max(has_value) as has_value,
        min(first_order) as first_seen_order,
        min_by(column_position, first_order) as column_position,
        max(last_order) as last_seen_order,
        max(last_ingested_at) as last_ingested_at
    from image_columns
    group by source_database, source_schema, source_table, column_name

),

keyed as (

    select
        sha2(concat_ws(
            '|',
            coalesce(source_database, ''),
            coalesce(source_schema, ''),
            source_table,
            column_name
        ), 256) as column_key,
        *
    from per_column

),

final as (

    {#- merged with what is known of the column, so that a type change names the type before #}
    select
        keyed.column_key,
        keyed.source_format,
        keyed.source_database,
        keyed.source_schema,
        keyed.source_table,
        keyed.column_name,
        {%- if is_incremental() %}
        coalesce(known.column_position, keyed.column_position) as column_position,
        {#- new changes without a value in the column keep the type known from earlier values #}
        case
            when keyed.has_value or known.column_key is null then keyed.type_json else known.type_json
        end as type_json,
        case
            when not keyed.has_value and known.column_key is not null then known.previous_type_json
            when not known.type_json <=> keyed.type_json then known.type_json
            when not keyed.first_type_json <=> keyed.type_json then keyed.first_type_json
            else known.previous_type_json
        end as previous_type_json,
        least(known.first_seen_order, keyed.first_seen_order) as first_seen_order,
        {%- else %}
        keyed.column_position,
        keyed.type_json,
        case when not keyed.first_type_json <=> keyed.type_json then keyed.first_type_json end
            as previous_type_json,
        keyed.first_seen_order,
        {%- endif %}
        keyed.last_seen_order,
        keyed.last_ingested_at
    from keyed
    {%- if is_incremental() %}
    left join {{ this }} as known
        on keyed.column_key = known.column_key
    {%- endif %}

)

select * from final
{%- endif %}
