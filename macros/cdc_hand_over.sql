{% macro cdc_hand_over(name, value) -%}
    {#-
        Keep `value` under `name` for this model's post-hooks in this dbt invocation, which take
        it with cdc_handed. dbt renders a model's SQL and, later, its hooks in two separate
        contexts: what the model's compile read (a query's rows) would otherwise be read again
        by the hook. The one object both contexts share is the manifest's flat graph (`graph`),
        so the value is kept there, under this node's id and the invocation's id. Only a value
        read at compile time that the model's own write does not change belongs here (the
        typed columns' specs: the hook's second spec query was 0.7-1.0 s of every build).
    -#}
    {%- if execute -%}
        {%- do graph.setdefault('cdc_lakehouse_handed', {}).update({
            model.unique_id ~ ' ' ~ name: {'invocation_id': invocation_id, 'value': value}
        }) -%}
    {%- endif -%}
{%- endmacro %}

{% macro cdc_handed(name) -%}
    {#- What this model handed over under `name` in this invocation (cdc_hand_over), taken: a
        second call returns none. None too when nothing was handed over (the hook runs without
        the model's compile, or a dbt version whose contexts share no graph): the caller then
        reads the value itself. -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set entry = graph.get('cdc_lakehouse_handed', {}).pop(model.unique_id ~ ' ' ~ name, none) -%}
    {{ return(entry.value if entry is mapping and entry.invocation_id == invocation_id else none) }}
{%- endmacro %}
