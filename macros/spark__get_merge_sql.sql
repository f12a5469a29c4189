{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) -%}
    {#-
        dbt-spark's MERGE (including merge_update_columns), plus one option: `merge_update_condition`, a predicate over
        DBT_INTERNAL_SOURCE / DBT_INTERNAL_DEST that a matched row must meet to be updated.
        gold.cdc_table_columns uses it so that a column's entry is only replaced by a later
        sighting in apply order: a late, older change never overwrites a newer one.
    -#}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- set update_condition = config.get('merge_update_condition') -%}
    {%- set update_columns = config.get('merge_update_columns') -%}
    {%- set keys = [unique_key] if unique_key is string else unique_key -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    {%- if not keys -%}
        {%- do predicates.append('false') -%}
    {%- endif %}

    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on {{ predicates | join(' and ') }}
    when matched {%- if update_condition %} and ({{ update_condition }}){% endif %} then update set
    {%- if update_columns %}
        {%- for column in update_columns %}
        {{ column }} = DBT_INTERNAL_SOURCE.{{ column }}{{ "," if not loop.last }}
        {%- endfor %}
    {%- else %} *
    {%- endif %}
    when not matched then insert *
{%- endmacro %}
