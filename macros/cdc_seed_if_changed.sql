{#
    Seeds are reloaded only when their CSV changed. dbt-spark drops, re-creates and refills a
    seed table on every `dbt build` (three Delta commits per seed, seconds each on a small
    machine, paid again by every incremental build). Here a loaded table remembers the
    checksum of the file it was loaded from (table property cdc.seed_checksum); while the file
    is unchanged the table is left as it is. `dbt seed --full-refresh` still reloads.
#}

{% macro _cdc_seed_checksum(model) -%}
    {{ return(model.checksum.checksum ~ ':' ~ tojson(model.config.get('column_types', {}))) }}
{%- endmacro %}

{% macro _cdc_seed_is_loaded(model, relation) -%}
    {%- if relation is none or not relation.is_table -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(cdc_table_property(relation, 'cdc.seed_checksum') == _cdc_seed_checksum(model)) }}
{%- endmacro %}

{% macro spark__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
    {%- if not full_refresh and _cdc_seed_is_loaded(model, old_relation) -%}
        {{ return('') }}
    {%- endif -%}
    {%- if old_relation -%}
        {{ adapter.drop_relation(old_relation) }}
    {%- endif -%}
    {{ return(create_csv_table(model, agate_table)) }}
{% endmacro %}

{% macro spark__load_csv_rows(model, agate_table) %}
    {%- if _cdc_seed_is_loaded(model, adapter.get_relation(this.database, this.schema, this.identifier)) -%}
        {{ return('-- unchanged since it was loaded: ' ~ _cdc_seed_checksum(model)) }}
    {%- endif -%}
    {%- set batch_size = get_batch_size() -%}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(batch_size) -%}
        {%- set bindings = [] -%}
        {%- for row in chunk -%}
            {%- do bindings.extend(row) -%}
        {%- endfor -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for col_name in agate_table.column_names -%}
                    {%- set inferred_type = adapter.convert_type(agate_table, loop.index0) -%}
                    {%- set type = column_override.get(col_name, inferred_type) -%}
                    cast({{ get_binding_char() }} as {{ type }})
                    {%- if not loop.last %},{% endif -%}
                {%- endfor -%})
                {%- if not loop.last %},{% endif %}
            {%- endfor %}
        {%- endset -%}
        {%- do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) -%}
        {%- if loop.index0 == 0 -%}
            {%- do statements.append(sql) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do adapter.add_query(
        'alter table ' ~ this.render() ~ " set tblproperties ('cdc.seed_checksum' = "
        ~ cdc_sql_string(_cdc_seed_checksum(model)) ~ ')'
    ) -%}
    {{ return(statements[0] if statements else '') }}
{% endmacro %}
