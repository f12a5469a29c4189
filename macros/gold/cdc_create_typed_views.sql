{% macro cdc_typed_view_name(source_database, source_schema, source_table) -%}
    {#-
        gold view name of a source table: <database>__[<schema>__]<table>, lower case, every
        character outside [a-z0-9_] replaced by _ (metastores do not take arbitrary table
        names; columns keep their exact names, quoted). gold.cdc_typed_columns lists the mapping
        (view_name).
    -#}
    {%- set parts = [source_database, source_schema, source_table] | reject('none') | list -%}
    {{ return(modules.re.sub('[^a-z0-9_]', '_', (parts | join('__')) | lower)) }}
{%- endmacro %}

{% macro cdc_quote(identifier) -%}
    {#- A backtick-quoted identifier; any character allowed, backticks doubled. -#}
    {{ return('`' ~ (identifier | replace('`', '``')) ~ '`') }}
{%- endmacro %}

{% macro cdc_sql_string(value) -%}
    {#- A Spark SQL string literal of `value` (or null). -#}
    {%- if value is none -%}{{ return('null') }}{%- endif -%}
    {{ return("'" ~ (value | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{%- endmacro %}

{% macro cdc_sql_list(values) -%}
    {#- The Spark SQL string literals of `values`, comma-separated: the inside of an `in (...)`. -#}
    {%- set literals = [] -%}
    {%- for value in values -%}
        {%- do literals.append(cdc_sql_string(value)) -%}
    {%- endfor -%}
    {{ return(literals | join(', ')) }}
{%- endmacro %}

{% macro _cdc_row_values(row) -%}
    {#-
        A row image (exact JSON text) -> map of marked values, read back with cdc_unmark_value.
        A genuine string that begins with U+0000 (a canal BLOB whose first byte is 0) would
        look like a marked value and lose that character: its U+0000 is doubled first, so
        that cdc_unmark_value removes only the added one. After a colon an unescaped quote
        always opens a value, never sits inside a string.
    -#}
    {%- set escaped -%}
        regexp_replace({{ row }}, '(:\\s*)"\\\\u0000', '$1"\\\\u0000\\\\u0000')
    {%- endset -%}
    {{ cdc_image_map(cdc_mark_json(escaped, portable=true)) }}
{%- endmacro %}

{% macro cdc_typed_column_specs() -%}
    {#-
        Every column of every source table with its decided Spark type and the SQL that
        produces it from the marked value map `_cdc_values`: read from gold.cdc_table_columns
        (vendor type metadata) and the cdc_column_type_overrides seed. Used by the model
        gold.cdc_typed_columns and by its post-hook that writes the typed views.
    -#}
    {%- set specs = [] -%}
    {%- set columns = ref('cdc_table_columns') -%}
    {%- if not execute or adapter.get_relation(columns.database, columns.schema, columns.identifier) is none -%}
        {#- parsing, docs and lint, or before the first build: no table is known yet #}
        {{ return(specs) }}
    {%- endif -%}
    {%- set rows = run_query(
        "select c.source_format, c.source_database, c.source_schema, c.source_table, c.column_name, "
        ~ "c.type_json, c.previous_type_json, o.spark_type as override_type "
        ~ "from " ~ ref('cdc_table_columns') ~ " as c "
        ~ "left join " ~ ref('cdc_column_type_overrides') ~ " as o "
        ~ "on c.source_database <=> o.source_database and c.source_table = o.source_table "
        ~ "and c.column_name = o.column_name "
        ~ "order by c.source_database, c.source_schema, c.source_table, c.first_seen_order, c.column_position"
    ).rows -%}
    {%- set seen = {} -%}
    {%- for row in rows -%}
        {%- set meta = (fromjson(row['type_json']) if row['type_json'] else none) or {} -%}
        {%- set previous = (fromjson(row['previous_type_json']) if row['previous_type_json'] else none) or {} -%}
        {%- set spark_type = cdc_column_spark_type(row['source_format'], meta, row['override_type']) -%}
        {%- set raw = cdc_unmark_value('_cdc_values[' ~ cdc_sql_string(row['column_name']) ~ ']') -%}
        {%- set folded = (row['source_database'], row['source_schema'], row['source_table'], row['column_name'] | lower) -%}
        {%- if folded in seen -%}
            {#- Spark column names are case-insensitive and MySQL's are too (Paimon's canal
                samples send `K1` and `k1` for one column): the spellings are one column, the
                first one seen names it and decides its type #}
            {%- set first = seen[folded] -%}
            {%- do first.update({'expression': 'coalesce(' ~ first.expression ~ ', cast('
                ~ cdc_typed_value(raw, first.spark_type, row['source_format'], first.meta) ~ ' as ' ~ first.spark_type ~ '))'}) -%}
        {%- else -%}
        {%- do specs.append({
            'source_format': row['source_format'],
            'source_database': row['source_database'],
            'source_schema': row['source_schema'],
            'source_table': row['source_table'],
            'view_name': cdc_typed_view_name(row['source_database'], row['source_schema'], row['source_table']),
            'column_name': row['column_name'],
            'spark_type': spark_type,
            'previous_spark_type': cdc_column_spark_type(row['source_format'], previous) if previous else none,
            'vendor_type': row['type_json'],
            'expression': 'cast(' ~ cdc_typed_value(raw, spark_type, row['source_format'], meta) ~ ' as ' ~ spark_type ~ ')',
            'meta': meta,
        }) -%}
        {%- do seen.update({folded: specs[-1]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(specs) }}
{%- endmacro %}

{% macro cdc_create_typed_views() -%}
    {#-
        Post-hook of gold.cdc_typed_columns: for every source table, (re)create gold.<name>
        (its current rows) and gold.<name>__history (SCD type 2 versions), one typed column per
        source column and the CDC metadata under the _cdc_ prefix.
    -#}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set relations = [] -%}
    {%- set tables = {} -%}
    {#- the specs the model's compile read (cdc_hand_over), else read here; none to read when
        the model found the views' inputs unchanged (cdc_typed_specs_recorded) -#}
    {%- set handed = cdc_handed('typed_column_specs') or {} -%}
    {%- if handed.get('unchanged') -%}
        {{ return('') }}
    {%- endif -%}
    {%- for spec in (handed.specs if 'specs' in handed else cdc_typed_column_specs()) -%}
        {%- do tables.setdefault((spec.source_database, spec.source_schema, spec.source_table), []).append(spec) -%}
    {%- endfor -%}
    {%- for key, specs in tables.items() -%}
        {%- set label = key | reject('none') | join('.') -%}
        {%- set where -%}
            source_database <=> {{ cdc_sql_string(key[0]) }}
            and source_schema <=> {{ cdc_sql_string(key[1]) }}
            and source_table = {{ cdc_sql_string(key[2]) }}
        {%- endset -%}
        {%- set typed_columns = [] -%}
        {%- for spec in specs -%}
            {%- do typed_columns.append(spec.expression ~ ' as ' ~ cdc_quote(spec.column_name)) -%}
        {%- endfor -%}
        {%- set current_sql -%}
            select
                {{ typed_columns | join(',\n                ') }},
                _cdc_pk,
                _cdc_last_op,
                _cdc_last_event_time,
                _cdc_vendor_sequence,
                _cdc_source_format,
                _cdc_unknown_columns,
                _cdc_copy_number
            from (
                select
                    {{ _cdc_row_values('row') }} as _cdc_values,
                    pk as _cdc_pk,
                    last_op as _cdc_last_op,
                    last_event_time as _cdc_last_event_time,
                    vendor_sequence as _cdc_vendor_sequence,
                    source_format as _cdc_source_format,
                    unknown_columns as _cdc_unknown_columns,
                    copy_number as _cdc_copy_number
                from {{ ref('cdc_current_state') }}
                where {{ where }}
            ) as current_rows
        {%- endset -%}
        {%- do relations.append(_cdc_typed_relation(
            specs[0].view_name, current_sql,
            'Current rows of ' ~ label ~ ', typed; generated from gold.cdc_current_state')) -%}
        {%- set history_sql -%}
            select
                {{ typed_columns | join(',\n                ') }},
                _cdc_pk,
                _cdc_op,
                _cdc_valid_from,
                _cdc_valid_to,
                _cdc_is_current,
                _cdc_vendor_sequence,
                _cdc_unknown_columns
            from (
                select
                    {{ _cdc_row_values('row') }} as _cdc_values,
                    pk as _cdc_pk,
                    op as _cdc_op,
                    valid_from as _cdc_valid_from,
                    valid_to as _cdc_valid_to,
                    is_current as _cdc_is_current,
                    vendor_sequence as _cdc_vendor_sequence,
                    unknown_columns as _cdc_unknown_columns
                from {{ ref('cdc_history') }}
                where row is not null and {{ where }}
            ) as versions
        {%- endset -%}
        {%- do relations.append(_cdc_typed_relation(
            specs[0].view_name ~ '__history', history_sql,
            'Versions of the rows of ' ~ label ~ ' (SCD type 2), typed; generated from gold.cdc_history')) -%}
    {%- endfor -%}
    {#- whether the views may differ from these definitions: not when the last build that
        created them recorded the same definitions (gold's database property cdc.typed_views,
        set once they were all created; a metastore entry, no Delta commit) and every one of
        them still exists. Else each view's comment, which holds its digest, says -#}
    {%- set state = local_md5(relations | map(attribute='state') | join('\n')) -%}
    {%- set gold_properties = cdc_database_properties('gold') -%}
    {%- set unchanged = not flags.FULL_REFRESH and gold_properties.get('cdc.typed_views') == state
        and relations | rejectattr('as_table') | map(attribute='name') | reject('in', cdc_gold_view_names()) | list | length == 0 -%}
    {%- set existing = {} if unchanged else cdc_typed_relations(relations | map(attribute='name') | list) -%}
    {%- set views = [] -%}
    {%- for relation in relations -%}
        {%- if relation.as_table or not unchanged -%}
            {%- do _cdc_create_typed_relation(relation, existing.get(relation.name), views) -%}
        {%- endif -%}
    {%- endfor -%}
    {#- the views in SQL scripts (Spark's begin ... end), so dbt sends one statement per hundred
        views, not one per view, saving a round trip each. A hundred at most, so that a script
        stays a few megabytes for Spark's parser and the Thrift server's messages, however many
        tables there are -#}
    {%- for script in views | batch(100) -%}
        {%- if script | length == 1 -%}
            {%- do run_query(script[0]) -%}
        {%- else -%}
            {%- do run_query('begin\n' ~ (script | join(';\n')) ~ ';\nend') -%}
        {%- endif -%}
    {%- endfor -%}
    {#- and, beside it, the key of what the specs were decided from with the views' names, so
        that a later build with the same inputs reads no spec at all (cdc_typed_specs_recorded).
        Not with a relation that is a table: that one is written at every build -#}
    {%- set recorded = {} -%}
    {%- if not unchanged -%}
        {%- do recorded.update({'cdc.typed_views': state}) -%}
    {%- endif -%}
    {%- if handed.get('key') is not none and relations | selectattr('as_table') | list | length == 0 -%}
        {%- set specs_state = cdc_typed_specs_state(handed.key, relations | map(attribute='name') | list) -%}
        {%- if specs_state != gold_properties.get('cdc.typed_specs') -%}
            {%- do recorded.update({'cdc.typed_specs': specs_state}) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if recorded -%}
        {%- set assignments = [] -%}
        {%- for name, value in recorded.items() -%}
            {%- do assignments.append(cdc_sql_string(name) ~ ' = ' ~ cdc_sql_string(value)) -%}
        {%- endfor -%}
        {%- do run_query('alter database gold set dbproperties (' ~ (assignments | join(', ')) ~ ')') -%}
    {%- endif -%}
    {{ return('') }}
{%- endmacro %}

{% macro _cdc_typed_relation(name, select_sql, comment) -%}
    {#- One typed relation of gold: a view of `select_sql`, or a Delta table when the view's text
        is too long for the metastore (Derby's Hive schema keeps view text in LONG VARCHAR, at
        most 32,700 characters, which a table of some 150 columns, or fewer with long decoding
        expressions, exceeds). A view's comment carries a digest of its definition. -#}
    {%- set as_table = (select_sql | length) > cdc_view_text_limit() -%}
    {%- set digest = 'definition ' ~ local_md5(select_sql)[:16] -%}
    {{ return({'name': name, 'select_sql': select_sql, 'comment': comment, 'as_table': as_table,
        'digest': digest, 'state': name ~ ' ' ~ ('table' if as_table else digest)}) }}
{%- endmacro %}

{% macro cdc_typed_relations(names) -%}
    {#- The relations of gold among `names` that exist: name -> {is_view, information}, from
        `show table extended` of just those (dbt's cache leaves the typed views out:
        spark__list_relations_without_caching). -#}
    {%- set found = {} -%}
    {%- for chunk in cdc_gold_relation_names() | select('in', names) | batch(200) -%}
        {%- for row in run_query("show table extended in gold like '" ~ (chunk | join('|')) ~ "'").rows -%}
            {%- do found.update({row[1]: {'is_view': 'Type: VIEW' in row[3], 'information': row[3]}}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(found) }}
{%- endmacro %}

{% macro _cdc_create_typed_relation(relation, existing, views) -%}
    {#-
        gold.<relation.name> as a view, or as a Delta table (relation.as_table); `existing`:
        what gold holds under that name (cdc_typed_relations), none when nothing. A relation
        whose kind changes is dropped first. A view's create statement is appended to `views`,
        for the caller to run, unless the view's comment shows the same digest (an unchanged
        view is not re-created, since each create is a metastore write); a table is
        created here, at every build (it holds the rows, not a definition).
    -#}
    {%- set name = relation.name -%}
    {%- if existing is not none and existing.is_view and relation.as_table -%}
        {%- do run_query('drop view if exists gold.' ~ cdc_quote(name)) -%}
    {%- elif existing is not none and not existing.is_view and not relation.as_table -%}
        {%- do run_query('drop table if exists gold.' ~ cdc_quote(name)) -%}
    {%- endif -%}
    {%- if relation.as_table -%}
        {%- do run_query('create or replace table gold.' ~ cdc_quote(name) ~ ' using delta comment '
            ~ cdc_sql_string(relation.comment ~ ' (a table: too wide for a view)') ~ ' as ' ~ relation.select_sql) -%}
    {%- elif existing is none or not existing.is_view or relation.digest not in (existing.information or '') -%}
        {%- do views.append('create or replace view gold.' ~ cdc_quote(name) ~ ' comment '
            ~ cdc_sql_string(relation.comment ~ ' (' ~ relation.digest ~ ')') ~ ' as ' ~ relation.select_sql) -%}
    {%- endif -%}
{%- endmacro %}
