{#
    drs-json and drs-json-c: Huawei Cloud DRS, MySQL to Kafka, JSON and JSON-C
    (shared/formats/huawei-drs.txt). The canal shape (`data` / `old` arrays of rows,
    `type`, `isDdl`, `sql`, `pkNames`, `mysqlType`, `sqlType`, `es`, `ts`, `database`,
    `table`), read by the canal family parser (canal_json.sql) with these differences:

    - `id` is DRS's own sequence of event operations and increases monotonically: it orders
      the changes (then `es`, then Kafka partition / offset, then the row position);
    - drs-json: a DELETE's deleted rows are in `old`; drs-json-c: in `data` (each falls back
      to the other array when its own is empty);
    - UPDATE: `old` holds the rows before the update (the overlay of canal_json.sql gives the
      same before image whether `old` is complete or only the changed columns);
    - drs-json-c writes timestamp values as 'yyyy-mm-dd hh:mm:ss' strings, drs-json as epoch
      seconds ('1624614713.201'): values are kept as sent (the source_format says which),
      and `es` / `ts` are read as epoch milliseconds whether numbers or strings, or as
      date-time text;
    - `type` DDL (with `isDdl` true and the statement in `sql`) is a DDL control event;
    - strings arrive with JSON escapes (`\u003c`, `\u003e`, `\u0026`, `\u003d`, `\u0027`; the
      document's table maps `<` to `\u003d`, a slip: it is `\u003c`): plain JSON escapes,
      decoded by the JSON parser; names are kept exactly as sent (the document's example
      table "test " ends in a space).
#}

{% macro parse_drs_json(records, format_ids) -%}
    {{ _canal_family_parse(records, format_ids, {
        'type': 'type',
        'old': 'old',
        'database': 'database',
        'schema': none,
        'key_field': 'pkNames',
        'value_types': 'mysqlType',
        'code_types': 'sqlType',
        'entry_type': none,
        'time': 'es',
        'order': ['id', 'es'],
        'sequence': ['id'],
        'delete_image_in_old': ['drs-json'],
        'transaction': none,
    }) }}
{%- endmacro %}
