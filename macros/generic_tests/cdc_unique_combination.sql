{% test cdc_unique_combination(model, columns) %}
{#- Fails with every combination of `columns` that occurs on more than one row. -#}

with validation_errors as (

    select
        {{ columns | join(', ') }},
        count(*) as occurrences
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(*) > 1

)

select * from validation_errors

{% endtest %}
