{% test cdc_apply_order_is_strict(model, key_columns, order_column='apply_order', id_column='change_id') %}
{#-
    Changes of one key must be totally ordered: every change has a well-formed apply order
    and no two changes of the same key share one (a tie would leave the final state to chance).
    Each failing row names the changes concerned (`id_column`: their Kafka coordinates), so an
    operator can find the records in bronze.
-#}

with changes as (

    select
        {{ key_columns | join(', ') }},
        {{ order_column }} as apply_order,
        {{ id_column }} as change_id
    from {{ model }}

),

malformed as (

    select
        {{ key_columns | join(', ') }},
        apply_order,
        'malformed apply order' as problem,
        1 as occurrences,
        change_id as changes
    from changes
    {#- phase, then six parts, each its digit count (two digits) and that many digits (1 to
        38), without leading zeros (cdc_apply_order): one alternative per count, so that a
        change costs one match of one pattern, where a looser pattern needs each part split
        out and checked after it. The end is `\z`: `$` would let a line terminator follow #}
    {%- set parts = ['01[0-9]'] %}
    {%- for digits in range(2, 39) %}
        {%- do parts.append('%02d' | format(digits) ~ '[1-9][0-9]{' ~ (digits - 1) ~ '}') %}
    {%- endfor %}
    where
        apply_order is null
        or apply_order not rlike '^[01](?:\\.(?:{{ parts | join('|') }})){6}\\z'

),

ties as (

    select
        {{ key_columns | join(', ') }},
        apply_order,
        'two changes of one key share an apply order' as problem,
        count(*) as occurrences,
        array_join(slice(array_sort(collect_list(change_id)), 1, 10), ', ') as changes
    from changes
    group by {{ key_columns | join(', ') }}, apply_order
    having count(*) > 1

),

validation_errors as (

    select * from malformed
    union all
    select * from ties

)

select * from validation_errors

{% endtest %}
