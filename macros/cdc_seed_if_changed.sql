{#
    Seeds are reloaded only when their CSV changed. dbt-spark drops, re-creates and refills a
    seed table on every `dbt build` (three Delta commits per seed, seconds each on a small
    machine, paid again by every incremental build). Here a loaded table remembers the
    checksum of the file it was loaded from (table property cdc.seed_checksum); while the file
    is unchanged the table is left as it is. `dbt seed --full-refresh` still reloads. A load
    is one statement, one Delta commit: the table created from its rows, with the checksum.
#}

{% macro _cdc_seed_checksum(model) -%}
    {#- `:literals`: a table loaded before empty cells were loaded as null (their 'None'
        strings) is loaded again once -#}
    {{ return(model.checksum.checksum ~ ':' ~ tojson(model.config.get('column_types', {})) ~ ':literals') }}
{%- endmacro %}

{% macro _cdc_seed_is_loaded(model, relation) -%}
    {%- if relation is none or not relation.is_table -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(cdc_table_property(relation, 'cdc.seed_checksum') == _cdc_seed_checksum(model)) }}
{%- endmacro %}

{% macro _cdc_seed_literal(value) -%}
    {#-
        A CSV cell as a Spark SQL literal. dbt-spark binds seed values by formatting them
        into the statement: an empty cell became the string 'None' (in process builds) and a
        quote ended the string. Here an empty cell is null and strings are escaped.
    -#}
    {%- if value is none -%}
        {{ return('null') }}
    {%- elif value is sameas true or value is sameas false -%}
        {{ return(value | string | lower) }}
    {%- elif value is number -%}
        {{ return(value | string) }}
    {%- else -%}
        {{ return(cdc_sql_string(value | string)) }}
    {%- endif -%}
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

{% macro spark__create_csv_table(model, agate_table) %}
    {#- a CSV with rows: nothing yet, spark__load_csv_rows creates the table with its rows and
        its checksum, in one statement and one Delta commit (create, insert and set the
        checksum were three: about half a second each per seed in a first build). dbt calls
        load_csv_rows only for a CSV with rows: an empty one is created here -#}
    {%- if agate_table.rows | length > 0 -%}
        {{ return('') }}
    {%- endif -%}
    {%- set sql = _cdc_seed_create(model, _cdc_seed_columns(model, agate_table), []) -%}
    {%- do adapter.add_query(sql) -%}
    {{ return(sql) }}
{% endmacro %}

{% macro _cdc_seed_values(rows, types) -%}
    {#- `values (...), ...` of the rows, each cell cast to its column's type -#}
    values
    {% for row in rows -%}
        ({%- for value in row -%}
            cast({{ _cdc_seed_literal(value) }} as {{ types[loop.index0] }})
            {%- if not loop.last %},{% endif -%}
        {%- endfor -%})
        {%- if not loop.last %},{% endif %}
    {%- endfor %}
{%- endmacro %}

{% macro _cdc_seed_columns(model, agate_table) -%}
    {#- the seed's columns as {'names': [...], 'types': [...]}: dbt's quoting and types -#}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set quote_seed_column = model['config'].get('quote_columns', None) -%}
    {%- set columns = {'names': [], 'types': []} -%}
    {%- for col_name in agate_table.column_names -%}
        {%- do columns.names.append(adapter.quote_seed_column(col_name | string, quote_seed_column)) -%}
        {%- do columns.types.append(column_override.get(col_name, adapter.convert_type(agate_table, loop.index0))) -%}
    {%- endfor -%}
    {{ return(columns) }}
{%- endmacro %}

{% macro _cdc_seed_checksum_clause(model) -%}
    tblproperties ('cdc.seed_checksum' = {{ cdc_sql_string(_cdc_seed_checksum(model)) }})
{%- endmacro %}

{% macro _cdc_seed_create(model, columns, rows, with_checksum=true) -%}
    {#- `create table ... as select` of `rows` (`columns`: _cdc_seed_columns); with no rows,
        one row of nulls that nothing keeps gives the columns their types -#}
    create table {{ this.render() }}
    {{ file_format_clause() }}
    {{ partition_cols(label="partitioned by") }}
    {{ clustered_cols(label="clustered by") }}
    {{ location_clause() }}
    {{ comment_clause() }}
    {%- if with_checksum %}
    {{ _cdc_seed_checksum_clause(model) }}
    {%- endif %}
    as select * from {{ _cdc_seed_values(rows or [[none] * (columns.names | length)], columns.types) }}
        as seed_rows ({{ columns.names | join(', ') }})
    {%- if not rows %}
    where false
    {%- endif %}
{%- endmacro %}

{% macro spark__load_csv_rows(model, agate_table) %}
    {%- if _cdc_seed_is_loaded(model, adapter.get_relation(this.database, this.schema, this.identifier)) -%}
        {{ return('-- unchanged since it was loaded: ' ~ _cdc_seed_checksum(model)) }}
    {%- endif -%}
    {%- set columns = _cdc_seed_columns(model, agate_table) -%}
    {%- set chunks = agate_table.rows | batch(get_batch_size()) | list -%}
    {#- the checksum goes with the rows: a table that has it holds all of them. Loaded in
        several statements (more rows than a batch), it is set after the last one -#}
    {%- set create = _cdc_seed_create(model, columns, chunks[0], with_checksum=chunks | length == 1) -%}
    {%- do adapter.add_query(create, abridge_sql_log=True) -%}
    {%- for chunk in chunks[1:] -%}
        {%- do adapter.add_query('insert into ' ~ this.render() ~ ' ' ~ _cdc_seed_values(chunk, columns.types),
            abridge_sql_log=True) -%}
    {%- endfor -%}
    {%- if chunks | length > 1 -%}
        {%- do adapter.add_query('alter table ' ~ this.render() ~ ' set ' ~ _cdc_seed_checksum_clause(model)) -%}
    {%- endif -%}
    {{ return(create) }}
{% endmacro %}
