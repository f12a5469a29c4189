"""``lakehouse sql "..."`` through a running ``lakehouse serve``.

Derby, the embedded metastore, lets one process at a time open it: while ``lakehouse serve``
holds it, ``lakehouse sql`` cannot start a Spark session of its own. It asks the server instead,
over the HiveServer2 protocol (PyHive, which dbt's ``thrift`` target brings), and prints the
answer as a local session would: decimals exact, timestamps as timestamps, and arrays, maps and
structs as values rather than the JSON text the protocol carries them in.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Sequence
from typing import Any

from lakehouse.sql_output import error_message

#: Column types the server sends as JSON text (Spark's ``toHiveString``), turned back into values.
_NESTED_TYPES = frozenset({"ARRAY_TYPE", "MAP_TYPE", "STRUCT_TYPE"})


class ThriftSqlError(RuntimeError):
    """A statement the server refused: the server's message (:func:`lakehouse.sql_output.error_message`),
    and which of the statements it was (``statement``, counted from 1)."""

    def __init__(self, message: str, statement: int) -> None:
        super().__init__(message)
        self.statement = statement


def _nested(text: str | None) -> Any:
    """A nested value from its JSON text; numbers with a fraction stay exact decimals."""
    if text is None:
        return None
    try:
        return json.loads(text, parse_float=decimal.Decimal)
    except ValueError:
        return text  # not JSON after all (e.g. a map with non-string keys): shown as sent


def _server_message(exc: Exception) -> str:
    """The server's own message, not PyHive's dump of the whole Thrift response."""
    status = getattr(getattr(exc, "args", [None])[0], "status", None)
    return error_message(getattr(status, "errorMessage", None) or str(exc)) or type(exc).__name__


def run_statements(host: str, port: int, statements: Sequence[str]) -> tuple[list[str], list[tuple[Any, ...]]] | None:
    """Run ``statements`` in order on the server; the last one's columns and rows, or None
    when it returned no result set (DDL, ``insert``)."""
    from pyhive import hive

    connection = hive.connect(host=host, port=port)
    try:
        cursor = connection.cursor()
        for number, statement in enumerate(statements, 1):
            try:
                cursor.execute(statement)
            except Exception as exc:  # noqa: BLE001 - PyHive's OperationalError carries the server's status
                raise ThriftSqlError(_server_message(exc), number) from exc
        if cursor.description is None:
            return None
        columns = [d[0] for d in cursor.description]
        nested = [d[1] in _NESTED_TYPES for d in cursor.description]
        rows = [tuple(_nested(v) if n else v for v, n in zip(row, nested, strict=True)) for row in cursor.fetchall()]
        return columns, rows
    finally:
        connection.close()
