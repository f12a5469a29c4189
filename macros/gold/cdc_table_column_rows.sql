{#
    The rows of gold.cdc_table_columns (models/gold/cdc_table_columns.sql), and the check that
    decides whether an increment's rows need writing at all.
#}

{% macro cdc_table_column_rows(watermark, up_to) -%}
    {#- SQL: one row per (source table, column) that the changes after `watermark` (none: every
        change) up to `up_to` carry, merged, in an incremental run, with what the table knows of
        the column. The model's query; cdc_table_column_change runs it too. -#}
with new_changes as (

    select * from {{ ref('cdc_changes') }}
    where after_image is not null
    {%- if watermark is not none %}
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
        where it parsed the shape of every change, not of every distinct shape #}
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
{%- endmacro %}

{% macro cdc_table_column_change(rows_sql) -%}
    {#-
        What an increment's rows (`rows_sql`, cdc_table_column_rows over the new changes) would
        change in the table, asked at compile time: 'none', 'columns' or 'types'.

        'none': every column is known, and for each the rows differ from the stored one in its
        newest order and ingest time only (the common case: an increment seldom brings a new
        column or a new type). The table is then left as it is; a commit of a table property,
        far cheaper than the MERGE, records the watermark (cdc_record_watermark), and the typed
        columns' key stays (cdc_typed_specs_key). So a stored row's
        last_seen_order and last_ingested_at may be older than its newest change, never its type.

        'columns': some column is new, and no known column's type, previous type, first order,
        position or format would move: the increment's MERGE is exact (a new column's row comes
        from the new changes alone, and a known one's only advances its orders).

        'types': a known column's type (or another of those) would move. Whether the new change
        is the newest of its column is decided by last_seen_order, which the 'none' runs may
        have left behind: the run reads every change instead (watermark none), which is exact
        whatever was left behind, as a first build's is. A type change at the source is rare.
    -#}
    {%- set counts = run_query(
        "select count_if(known.column_key is null) as new_columns, "
        ~ "count_if(known.column_key is not null and changed.last_seen_order > known.last_seen_order and not ("
        ~ "changed.type_json <=> known.type_json and changed.previous_type_json <=> known.previous_type_json "
        ~ "and changed.first_seen_order <=> known.first_seen_order and changed.column_position <=> known.column_position "
        ~ "and changed.source_format <=> known.source_format)) as moved "
        ~ "from (" ~ rows_sql ~ ") as changed left join " ~ this ~ " as known on changed.column_key = known.column_key"
    ).rows[0] -%}
    {%- if counts['moved'] > 0 -%}
        {{ return('types') }}
    {%- elif counts['new_columns'] > 0 -%}
        {{ return('columns') }}
    {%- endif -%}
    {{ return('none') }}
{%- endmacro %}
