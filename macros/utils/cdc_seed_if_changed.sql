{#
    Seeds are views of their rows, reloaded only when their CSV changed (the materialization
    `seed` below). dbt-spark drops, re-creates and refills a seed table on every `dbt build`
    (three Delta commits per seed, seconds each on a small machine, paid again by every
    incremental build). Here a loaded seed remembers the checksum of the file it was loaded from
    (property cdc.seed_checksum); while the file is unchanged the seed is left as it is. `dbt
    seed --full-refresh` still reloads. A seed too long for a view is a Delta table, loaded in
    one statement, one Delta commit: the table created from its rows, with the checksum.
#}

{% macro _cdc_seed_checksum(model) -%}
    {#- `:literals`: a table loaded before empty cells were loaded as null (their 'None'
        strings) is loaded again once -#}
    {{ return(model.checksum.checksum ~ ':' ~ tojson(model.config.get('column_types', {})) ~ ':literals') }}
{%- endmacro %}

{% macro _cdc_seed_is_loaded(model, relation) -%}
    {#- whether `relation` (a view or a table: the materialization drops a seed of the wrong
        kind first) holds the rows of the model's CSV as it is now; a view's checksum is read
        from dbt's listing, without a query -#}
    {{ return(cdc_relation_has_property(relation, 'cdc.seed_checksum', _cdc_seed_checksum(model))) }}
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
    {#- `create table ... as select` of `rows` (`columns`: _cdc_seed_columns), typed as a
        view's rows are (_cdc_seed_select) -#}
    create table {{ this.render() }}
    {{ file_format_clause() }}
    {{ partition_cols(label="partitioned by") }}
    {{ clustered_cols(label="clustered by") }}
    {{ location_clause() }}
    {{ comment_clause() }}
    {%- if with_checksum %}
    {{ _cdc_seed_checksum_clause(model) }}
    {%- endif %}
    as {{ _cdc_seed_select(columns, rows) }}
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
        {%- do adapter.add_query('insert into ' ~ this.render() ~ ' ' ~ _cdc_seed_select(columns, chunk),
            abridge_sql_log=True) -%}
    {%- endfor -%}
    {%- if chunks | length > 1 -%}
        {%- do adapter.add_query('alter table ' ~ this.render() ~ ' set ' ~ _cdc_seed_checksum_clause(model)) -%}
    {%- endif -%}
    {{ return(create) }}
{% endmacro %}

{% macro cdc_view_text_limit() -%}
    {#- The longest view text the metastore keeps: Derby's Hive schema stores it in LONG VARCHAR,
        at most 32,700 characters (with room to spare). Longer SQL goes into a Delta table. -#}
    {{ return(30000) }}
{%- endmacro %}

{% macro _cdc_seed_select(columns, rows) -%}
    {#- `select` of `rows` as literals, each column cast to its type once (`columns`:
        _cdc_seed_columns). A cell is cast itself only when its literal is not already of its
        column's kind (a number or a boolean in a column of another type): an inline table
        gives a column of mixed literals one common type, which would turn 1 beside 2.5 into
        1.0. With no rows, one row of nulls that nothing keeps gives the columns their types. -#}
    select
        {%- for name in columns.names %}
        cast(c{{ loop.index0 }} as {{ columns.types[loop.index0] }}) as {{ name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from values
    {%- for row in (rows or [[none] * (columns.names | length)]) %}
        ({%- for value in row -%}
            {%- set literal = _cdc_seed_literal(value) -%}
            {%- if value is none or (value is string and columns.types[loop.index0] == 'string') -%}
                {{ literal }}
            {%- else -%}
                cast({{ literal }} as {{ columns.types[loop.index0] }})
            {%- endif -%}
            {%- if not loop.last %}, {% endif -%}
        {%- endfor -%}){{ ',' if not loop.last }}
    {%- endfor %}
    as seed_rows ({% for name in columns.names %}c{{ loop.index0 }}{{ ', ' if not loop.last }}{% endfor %})
    {%- if not rows %}
    where false
    {%- endif %}
{%- endmacro %}

{% materialization seed, adapter='spark' %}
    {#-
        A seed is a view of its rows: its CSV's cells as literals in the view's text, with the
        checksum of the file (cdc.seed_checksum) among its properties. Its rows are a few
        hundred at most, read by every parse and typed-column query: a Delta table costs a
        write and a commit to load and a snapshot to read; a view is one metastore entry, and
        Spark reads its rows from the plan.
        While the checksum is the file's, the view is left as it is; `--full-refresh` creates
        it again. A CSV whose view text would be longer than the metastore keeps
        (cdc_view_text_limit) is loaded as a Delta table, as dbt-spark loads seeds (with this
        project's literals and checksum: spark__reset_csv_table, spark__load_csv_rows).
    -#}
    {%- set full_refresh_mode = should_full_refresh() -%}
    {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
    {%- set agate_table = load_agate_table() -%}
    {%- do store_result('agate_table', response='OK', agate_table=agate_table) -%}
    {%- set rows_affected = agate_table.rows | length -%}
    {%- set view_sql = _cdc_seed_select(_cdc_seed_columns(model, agate_table), agate_table.rows) -%}
    {%- set as_view = (view_sql | length) <= cdc_view_text_limit() -%}

    {{ run_hooks(pre_hooks, inside_transaction=False) }}
    {{ run_hooks(pre_hooks, inside_transaction=True) }}

    {%- if old_relation is not none and old_relation.is_view != as_view -%}
        {#- a seed that changes kind (its CSV grew past the limit, or an earlier version's table) #}
        {%- do adapter.drop_relation(old_relation) -%}
        {%- set old_relation = none -%}
    {%- endif -%}
    {%- if as_view -%}
        {%- set target_relation = this.incorporate(type='view') -%}
        {%- if not full_refresh_mode and _cdc_seed_is_loaded(model, old_relation) -%}
            {%- set sql = '-- unchanged since it was loaded: ' ~ _cdc_seed_checksum(model) -%}
        {%- else -%}
            {%- set sql = 'create or replace view ' ~ target_relation ~ '\n' ~ _cdc_seed_checksum_clause(model)
                ~ '\nas\n' ~ view_sql -%}
            {%- do run_query(sql) -%}
        {%- endif -%}
    {%- else -%}
        {%- set target_relation = this.incorporate(type='table') -%}
        {%- set create_sql = reset_csv_table(model, full_refresh_mode, old_relation, agate_table)
            if old_relation is not none else create_csv_table(model, agate_table) -%}
        {%- set sql = get_csv_sql(create_sql, load_csv_rows(model, agate_table) if rows_affected > 0 else '') -%}
    {%- endif -%}

    {%- set code = 'CREATE' if full_refresh_mode else 'INSERT' -%}
    {% call noop_statement('main', code ~ ' ' ~ rows_affected, code, rows_affected) %}
        {{ sql }};
    {% endcall %}

    {% do persist_docs(target_relation, model) %}
    {#- what is loaded now, for the rest of this invocation: dbt's cache of the relation still
        holds the properties listed before this load (cdc_typed_specs_key reads it) #}
    {%- do cdc_invocation_memo('seeds').update({target_relation | string: _cdc_seed_checksum(model)}) -%}

    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {{ adapter.commit() }}
    {{ run_hooks(post_hooks, inside_transaction=False) }}

    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
