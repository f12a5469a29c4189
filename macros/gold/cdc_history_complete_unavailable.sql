{% macro cdc_history_complete_unavailable(effects, stored, completing=true) -%}
    {#-
        CTEs ending with `new_effects`: the effects of `effects` (a CTE of gold.cdc_history_versions'
        new versions, with silver's unavailable_columns) with every column Debezium could not
        send (macros/utils/cdc_unavailable_values.sql) given the value it had in the key's previous
        version: the newest earlier version of the key, new or `stored` (the history table,
        none in a first build), that has the column, whose own value was complete. Where that
        version is a delete, or there is none, the value is NULL and the column is named in
        unknown_columns. Stored versions were completed when they were written, so the newest
        one before a key's first new placeholder is the only one read, and only for those keys.
        `completing` false (no new change holds a placeholder) compiles the pass-through alone.
        Rows are read as maps of VARIANT values over marked JSON (macros/utils/cdc_json.sql): nested
        arrays and objects stay JSON, and numbers stay exact as marked strings.
    -#}
    {%- set value_map = "from_json(" ~ cdc_mark_json('{row}') ~ ", 'map<string, variant>')" -%}
    {%- set key = ['source_database', 'source_schema', 'source_table', 'pk'] -%}
    {%- set columns = [
        'source_format', 'source_database', 'source_schema', 'source_table', 'pk', 'op', 'row', 'has_row',
        'event_time', 'vendor_sequence', 'apply_order', 'change_id', 'ingested_at', 'is_stored',
        'stored_next_apply_order', 'stored_version_id', 'keyless',
    ] -%}
{%- if completing %}
toasted_effects as (

    select * from {{ effects }}
    where size(unavailable_columns) > 0

),

toasted_keys as (

    select {{ key | join(', ') }}, min(apply_order) as first_toasted_order
    from toasted_effects
    group by {{ key | join(', ') }}

),

value_givers as (

    {#- the versions that may give a column its value, as marked value maps (null for a
        delete), with the columns they lack themselves #}
    select
        {%- for k in key %} given.{{ k }},{% endfor %}
        given.apply_order,
        {{ value_map | replace('{row}', 'given.row') }} as given_values,
        coalesce(given.unavailable_columns, cast(array() as array<string>)) as lacking_columns
    from {{ effects }} as given
    left semi join toasted_keys
        on {% for k in key %}given.{{ k }} <=> toasted_keys.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
    {%- if stored is not none %}

    union all

    select
        {%- for k in key %} {{ k }},{% endfor %}
        last_before.apply_order,
        {{ value_map | replace('{row}', 'last_before.row') }} as given_values,
        coalesce(last_before.unknown_columns, cast(array() as array<string>)) as lacking_columns
    from (
        select /*+ broadcast(toasted_keys) */
            {%- for k in key %} stored.{{ k }},{% endfor %}
            max_by(struct(stored.apply_order, stored.row, stored.unknown_columns), stored.apply_order) as last_before
        from {{ stored }} as stored
        inner join toasted_keys
            on
                {% for k in key %}stored.{{ k }} <=> toasted_keys.{{ k }} and {% endfor %}stored.apply_order < toasted_keys.first_toasted_order
        where not stored.is_closer
        group by {% for k in key %}stored.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
    ) as predecessors
    {%- endif %}

),

filled_values as (

    {#- each (version, column) to fill, with the newest earlier giver that has the column's own
        value, or is a delete (the row did not exist then) #}
    select
        {%- for k in key %} wanted.{{ k }},{% endfor %}
        wanted.apply_order,
        wanted.column_name,
        max_by(named_struct(
            'value', value_givers.given_values[wanted.column_name],
            'known', value_givers.given_values is not null
                and map_contains_key(value_givers.given_values, wanted.column_name)
        ), value_givers.apply_order) as found
    from (
        select {{ key | join(', ') }}, apply_order, explode(unavailable_columns) as column_name
        from toasted_effects
    ) as wanted
    inner join value_givers
        on
            {% for k in key %}wanted.{{ k }} <=> value_givers.{{ k }} and {% endfor %}value_givers.apply_order < wanted.apply_order
            and (value_givers.given_values is null or not array_contains(value_givers.lacking_columns, wanted.column_name))
    group by {% for k in key %}wanted.{{ k }}, {% endfor %}wanted.apply_order, wanted.column_name

),

completed_effects as (

    select
        {%- for c in columns %}
        {%- if c == 'row' %}
        {{ cdc_unmark_json(
            "to_json(map_from_arrays(map_keys(toasted.sent_values), transform(map_keys(toasted.sent_values), col -> "
            ~ "case when array_contains(toasted.unavailable_columns, col) then "
            ~ "case when filled.found_values[col].known then filled.found_values[col].value end "
            ~ "else toasted.sent_values[col] end)))"
        ) }} as row,
        {%- else %}
        toasted.{{ c }},
        {%- endif %}
        {%- endfor %}
        filter(toasted.unavailable_columns, col -> not coalesce(filled.found_values[col].known, false))
            as unknown_columns
    from (
        select *, {{ value_map | replace('{row}', 'row') }} as sent_values
        from toasted_effects
    ) as toasted
    left join (
        select
            {{ key | join(', ') }}, apply_order,
            map_from_entries(collect_list(struct(column_name, found))) as found_values
        from filled_values
        group by {{ key | join(', ') }}, apply_order
    ) as filled
        on
            {% for k in key %}toasted.{{ k }} <=> filled.{{ k }} and {% endfor %}toasted.apply_order = filled.apply_order

),
{%- endif %}

new_effects as (

    select {{ columns | join(', ') }}, cast(array() as array<string>) as unknown_columns
    from {{ effects }}
    {%- if completing %}
    where not coalesce(size(unavailable_columns) > 0, false)

    union all

    select * from completed_effects
    {%- endif %}

),
{%- endmacro %}
