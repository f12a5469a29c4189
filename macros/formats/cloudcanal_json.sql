{#
    cloudcanal-json: CloudCanal's own JSON ("CloudCanal Json", shared/formats/cloudcanal-mq.txt).
    The canal shape under other names, read by the canal family parser (canal_json.sql):

    - `action` INSERT / UPDATE / DELETE, DDL actions (ALTER, CREATE, ...) with `isDdl` true and
      the statement in `sql`; `entryType` other than ROWDATA (TRANSACTIONBEGIN /
      TRANSACTIONEND) is a transaction control event;
    - `data` (the rows of the operation; a DELETE's deleted rows) and `before` (an UPDATE's
      rows before the change, aligned by position; overlaid on the data row, so a partial
      `before` gives the full before image too) are arrays: one change per row;
    - `db` and `schema` (the same name for MySQL; the schema for PostgreSQL-like sources),
      `table`; `pks` the key columns (empty: a table without key, multiset semantics);
    - `dbValType` (type per column) and `jdbcType` (java.sql.Types code) become column_types;
      a DDL's `tableChanges` (columns with typeExpression / typeName / jdbcType / position)
      too;
    - order: `execTs` (source execution time, ms), then `bid` (batch id), then Kafka
      partition / offset and the row position; `sendTs` is the send time and is not used.
#}

{% macro parse_cloudcanal_json(records, format_ids) -%}
    {{ _canal_family_parse(records, format_ids, {
        'type': 'action',
        'old': 'before',
        'database': 'db',
        'schema': 'schema',
        'key_field': 'pks',
        'value_types': 'dbValType',
        'code_types': 'jdbcType',
        'entry_type': 'entryType',
        'time': 'execTs',
        'order': ['execTs', 'bid'],
        'sequence': ['execTs', 'bid'],
        'delete_image_in_old': [],
        'transaction': none,
    }) }}
{%- endmacro %}
