{% test cdc_fresh_within(model, hours, lag_column='lag_seconds') %}
{#-
    Fails with the sources whose lag is over `hours`; null `hours` disables the check (how the
    freshness thresholds stay off until a project sets its vars).
-#}

with validation_errors as (

    select *
    from {{ model }}
    {%- if hours is none or (hours | string | lower) in ['none', 'null', ''] %}
    where false
    {%- else %}
    where {{ lag_column }} > {{ hours }} * 3600
    {%- endif %}

)

select * from validation_errors

{% endtest %}
