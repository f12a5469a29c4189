{% test cdc_apply_order_is_strict(model, key_columns, order_column='apply_order') %}
{#-
    Changes of one key must be totally ordered: every change has a well-formed apply order
    and no two changes of the same key share one (a tie would leave the final state to chance).
-#}

with changes as (

    select
        {{ key_columns | join(', ') }},
        {{ order_column }} as apply_order
    from {{ model }}

),

malformed as (

    select
        {{ key_columns | join(', ') }},
        apply_order,
        'malformed apply order' as problem,
        1 as occurrences
    from changes
    {#- phase, then six parts, each its digit count (two digits) and that many digits, without
        leading zeros (cdc_apply_order) #}
    where
        apply_order is null
        or apply_order not rlike '^[01](\\.[0-9]{3,40}){6}$'
        or exists(
            slice(split(apply_order, '[.]'), 2, 6),
            part -> length(part) != 2 + cast(left(part, 2) as int) or (length(part) > 3 and substr(part, 3, 1) = '0')
        )

),

ties as (

    select
        {{ key_columns | join(', ') }},
        apply_order,
        'two changes of one key share an apply order' as problem,
        count(*) as occurrences
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
