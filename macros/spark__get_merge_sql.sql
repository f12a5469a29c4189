{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) -%}
    {#-
        dbt-spark's MERGE (including merge_update_columns), plus one option: `merge_update_condition`, a predicate over
        DBT_INTERNAL_SOURCE / DBT_INTERNAL_DEST that a matched row must meet to be updated.
        gold.cdc_table_columns uses it so that a column's entry is only replaced by a later
        sighting in apply order: a late, older change never overwrites a newer one.
        And a predicate over the target that the model decided at compile time, from what its
        increment holds (config() cannot change at run time): cdc_merge_target_filter below; and,
        decided the same way, the match itself in place of the unique key's, with a condition
        on the inserts (cdc_merge_on).
    -#}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- set target_filter = _cdc_merge_marker('cdc_merge_target_filter') -%}
    {%- if target_filter -%}
        {%- do predicates.append(target_filter) -%}
    {%- endif -%}
    {%- set merge_on = _cdc_merge_marker('cdc_merge_on') -%}
    {%- set insert_when = _cdc_merge_marker('cdc_merge_insert_when') -%}
    {%- set update_condition = config.get('merge_update_condition') -%}
    {%- set update_columns = config.get('merge_update_columns') -%}
    {%- set keys = [] if merge_on else [unique_key] if unique_key is string else unique_key -%}
    {%- if merge_on -%}
        {%- do predicates.append(merge_on) -%}
    {%- endif -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    {%- if not keys and not merge_on -%}
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
    when not matched {%- if insert_when %} and ({{ insert_when }}){% endif %} then insert *
{%- endmacro %}

{% macro _cdc_merge_marker(name) -%}
    {#- The SQL the running model's compiled code states in a `/* <name>: ... */` comment
        (cdc_merge_target_filter, cdc_merge_on), or none. -#}
    {%- set found = modules.re.search('/[*] ' ~ name ~ ': (.+?) [*]/', (model or {}).get('compiled_code') or '') -%}
    {{ return(found.group(1) if found else none) }}
{%- endmacro %}

{% macro cdc_merge_target_filter(predicate) -%}
    {#-
        Placed in an incremental model's SQL: its MERGE searches only the target rows that meet
        `predicate` (over DBT_INTERNAL_DEST), so Delta skips the partitions and files that cannot
        match. For a model that knows, from what it read at compile time, that no other stored
        row can be touched. A comment, so the model's query is unchanged.
    -#}
    /* cdc_merge_target_filter: {{ predicate }} */
{%- endmacro %}

{% macro cdc_merge_on(predicate, insert_when=none) -%}
    {#-
        Placed in an incremental model's SQL: its MERGE matches source and target rows by
        `predicate` (over DBT_INTERNAL_SOURCE and DBT_INTERNAL_DEST) instead of by the unique
        key, and inserts only the unmatched source rows that meet `insert_when`. For a model
        whose source holds, beside the rows to insert, rows that only update stored ones found
        by other columns than the key (gold.cdc_history's closers). Comments, as
        cdc_merge_target_filter.
    -#}
    /* cdc_merge_on: {{ predicate }} */
    {%- if insert_when %}
    /* cdc_merge_insert_when: {{ insert_when }} */
    {%- endif %}
{%- endmacro %}
