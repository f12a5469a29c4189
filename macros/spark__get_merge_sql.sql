{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) -%}
    {#-
        dbt-spark's MERGE (including merge_update_columns), and three options:
        - `merge_null_safe_keys`: true compares the keys with <=>, for a key of nullable
          columns (gold.cdc_current_state's source_database and source_schema); dbt-spark's =
          otherwise, which keeps Spark's plan of a MERGE on one key column as it is;
        - `merge_update_condition`, a predicate over DBT_INTERNAL_SOURCE / DBT_INTERNAL_DEST
          that a matched row must meet to be updated. gold.cdc_table_columns uses it so that a
          column's entry is only replaced by a later sighting in apply order: a late, older
          change never overwrites a newer one;
        - `merge_delete_condition`, a predicate over DBT_INTERNAL_SOURCE: a matched row that
          meets it is deleted, and a source row that meets it and matches nothing is not
          inserted. gold.cdc_current_state uses it for the keys that have no current row any
          more.
    -#}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- set update_condition = config.get('merge_update_condition') -%}
    {%- set delete_condition = config.get('merge_delete_condition') -%}
    {%- set update_columns = config.get('merge_update_columns') -%}
    {%- set equals = ' <=> ' if config.get('merge_null_safe_keys') else ' = ' -%}
    {%- set keys = [unique_key] if unique_key is string else unique_key -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ equals ~ 'DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    {%- if not keys -%}
        {%- do predicates.append('false') -%}
    {%- endif %}

    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on {{ predicates | join(' and ') }}
    {%- if delete_condition %}
    when matched and ({{ delete_condition }}) then delete
    {%- endif %}
    when matched {%- if update_condition %} and ({{ update_condition }}){% endif %} then update set
    {%- if update_columns %}
        {%- for column in update_columns %}
        {{ column }} = DBT_INTERNAL_SOURCE.{{ column }}{{ "," if not loop.last }}
        {%- endfor %}
    {%- else %} *
    {%- endif %}
    when not matched {%- if delete_condition %} and not ({{ delete_condition }}){% endif %} then insert *
{%- endmacro %}
