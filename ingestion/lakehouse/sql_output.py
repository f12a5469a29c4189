"""Printing query results: an aligned table for people, JSON lines for programs.

Values are printed without loss: decimals keep every digit, binary is base64, timestamps ISO.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
from collections.abc import Sequence
from typing import Any


def to_jsonable(value: Any) -> Any:
    """A JSON-safe form of a Spark value; Decimal stays exact (see :class:`_ExactEncoder`)."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "asDict"):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "asDict"):
        return {k: to_jsonable(v) for k, v in value.asDict().items()}
    return value


_DECIMAL_MARK = "\u0000decimal:"
_DECIMAL_TOKEN = re.compile(r'"\\u0000decimal:(-?[0-9.]+)"')


def _mark_decimals(value: Any) -> Any:
    """Decimals become marked strings, unquoted again after ``json.dumps`` (no float on the way)."""
    if isinstance(value, decimal.Decimal):
        return _DECIMAL_MARK + format(value, "f")
    if isinstance(value, dict):
        return {k: _mark_decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark_decimals(v) for v in value]
    return value


def print_json(columns: Sequence[str], rows: Sequence[Any]) -> None:
    """One JSON object per row, keys in column order, decimals with all their digits."""
    for row in rows:
        obj = {c: _mark_decimals(to_jsonable(v)) for c, v in zip(columns, row, strict=True)}
        print(_DECIMAL_TOKEN.sub(r"\1", json.dumps(obj, ensure_ascii=False)))


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray, dict, list)) or hasattr(value, "asDict"):
        return json.dumps(to_jsonable(value), ensure_ascii=False)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)


def print_table(columns: Sequence[str], rows: Sequence[Any]) -> None:
    """An aligned text table with a header and a row count."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    print(line)
    print("-+-".join("-" * w for w in widths))
    for r in cells:
        print(" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")


_CARET_LINE = re.compile(r"^-*\^+$")
#: What Spark's Thrift server puts before the session's own message (``lakehouse sql`` through
#: ``lakehouse serve``): the error class and the Java exception's class, both in the message too.
_SERVER_PREFIX = re.compile(r"^Error running query: (\[[A-Z0-9_.]+\] )?[\w.$]+: ")


def error_message(text: str) -> str:
    """Spark's error as a person needs it: the first line that says something (the error class
    and message; an AnalysisException's plan after it is left out) and, for a syntax error, the
    line of the statement where parsing stopped with Spark's caret under it.

    A ParseException's text begins with a blank line, so its first line alone said nothing:
    ``lakehouse sql "selec 1"`` printed ``sql failed:`` and no more. Through ``lakehouse serve``
    the same error comes after the server's prefix, which is left out."""
    lines = [line.rstrip() for line in _SERVER_PREFIX.sub("", text).strip().splitlines()]
    if not lines:
        return ""
    message = lines[0]
    if "== SQL ==" in lines:
        context = lines[lines.index("== SQL ==") + 1:]
        caret = next((i for i, line in enumerate(context) if _CARET_LINE.match(line)), None)
        if caret:
            message += f"\n    {context[caret - 1]}\n    {context[caret]}"
    return message
