"""``describe history <table> limit <n>``, the same rows without the statement's Spark job.

Why: the models read the newest commits of the tables they depend on at compile time, to know
what is new since their last run (``cdc_last_commit``, macros/cdc_watermark.sql): four to six
``describe history`` statements in a build, most of them one after the other on its longest
path. Delta answers each with a Spark job over the commit files and a local relation of the
rows, a noticeable share of a small increment. The JVM side (``cdc.lakehouse.DeltaCommits``,
jvm/functions) reads the same commit files on the driver with Delta's own classes and gives the
rows Delta's encoder writes, without a job.

dbt's statements take this path in ``lakehouse build`` (the cursor of
:func:`lakehouse.dbt_session.reuse_running_session`); a plain ``dbt build``, the Thrift server
and any statement of another form run the statement itself. So does a table this cannot read
(not a Delta table, not found, the project's jar missing): the statement then says why.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: ``describe history db.table limit n``, after dbt's leading query comment; names bare or quoted.
_STATEMENT = re.compile(
    r"^\s*(?:/\*.*?\*/\s*)*describe\s+history\s+"
    r"(?:`([^`]+)`|(\w+))\s*\.\s*(?:`([^`]+)`|(\w+))\s+limit\s+(\d+)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)

#: The rows' schema, read once per process from the JVM side (the statement's output columns).
_SCHEMA: list[Any] = []


class HistoryRows:
    """The rows of one ``describe history``, as far as dbt-spark's cursor reads a frame: its
    schema, ``collect`` and ``take``."""

    def __init__(self, schema: Any, rows: list[Any]) -> None:
        self.schema = schema
        self._rows = rows

    def collect(self) -> list[Any]:
        """Every row, newest commit first."""
        return list(self._rows)

    def take(self, count: int) -> list[Any]:
        """The first ``count`` rows."""
        return self._rows[:count]


def answer(session: Any, sql: str) -> HistoryRows | None:
    """The rows of ``sql`` when it is ``describe history <db>.<table> limit <n>`` of a Delta
    table, read on the driver of ``session`` (a pyspark ``SparkSession``); None for any other
    statement, or when they cannot be read so (the caller runs the statement)."""
    match = _STATEMENT.match(sql)
    if match is None:
        return None
    database = match.group(1) or match.group(2)
    table = match.group(3) or match.group(4)
    limit = int(match.group(5))
    if limit < 1:
        return None
    try:
        commits = session._jvm.cdc.lakehouse.DeltaCommits  # noqa: SLF001 - pyspark's gateway
        if not _SCHEMA:
            from pyspark.sql.types import StructType

            _SCHEMA.append(StructType.fromJson(json.loads(commits.schemaJson())))
        pieces = commits.newest(session._jsparkSession, database, table, limit)  # noqa: SLF001
        values = json.loads("".join(pieces))
    except Exception:  # noqa: BLE001 - the statement itself reports any failure
        return None
    schema = _SCHEMA[0]
    return HistoryRows(schema, [schema.fromInternal(_internal(value, schema)) for value in values])


def rows(spark: Any, table: str, limit: int) -> list[Any]:
    """The rows of ``describe history <table> limit <limit>`` on ``spark``, newest first: read
    on the driver when :func:`answer` can, else by the statement."""
    sql = f"describe history {table} limit {limit}"
    answered = answer(spark, sql)
    return answered.collect() if answered is not None else spark.sql(sql).collect()


def _internal(value: Any, data_type: Any) -> Any:
    """A value of the JVM side's JSON as pyspark's internal form of ``data_type`` (a struct a
    tuple, a map a dict, a timestamp microseconds), which ``fromInternal`` turns into what
    ``collect`` gives."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if value is None:
        return None
    if isinstance(data_type, StructType):
        fields = zip(value, data_type.fields, strict=True)
        return tuple(_internal(field_value, field.dataType) for field_value, field in fields)
    if isinstance(data_type, MapType):
        keys, items = value
        return {
            _internal(key, data_type.keyType): _internal(item, data_type.valueType)
            for key, item in zip(keys, items, strict=True)
        }
    if isinstance(data_type, ArrayType):
        return [_internal(item, data_type.elementType) for item in value]
    return value
