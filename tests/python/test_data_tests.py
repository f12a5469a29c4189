"""The accounting identity's data test (SPEC rule 8, macros/generic_tests/
cdc_accounts_for_every_record.sql) finds each way a record can be lost or counted twice: it is
run on a lakehouse that a build left whole, then on one broken on purpose, and every problem it
reports is checked by record."""

from __future__ import annotations

from cdc_messages import DebeziumTable
from conftest import DBT_TARGET
from pyspark.sql import functions as F

COMPILED = DBT_TARGET / "compiled" / "cdc_lakehouse" / "models"


def _accounting_query() -> str:
    """The accounting test's query as the last build compiled it (on bronze's source)."""
    [path] = COMPILED.glob("bronze/_bronze__sources.yml/source_cdc_accounts_for_every_*.sql")
    return path.read_text("utf-8")


def _append(lakehouse, offset: int, **changes) -> None:
    """Append silver's rows of the record at ``offset`` again, with ``changes`` (column: value)."""
    rows = lakehouse.spark.table("silver.cdc_parsed").where(F.col("kafka_offset") == offset)
    for column, value in changes.items():
        rows = rows.withColumn(column, F.lit(value).cast(rows.schema[column].dataType))
    rows.write.format("delta").mode("append").insertInto("silver.cdc_parsed")


def test_the_accounting_test_reports_every_lost_or_doubled_record(lakehouse):
    t = DebeziumTable("dbserver1", "inventory", "accounted", ["id"])
    one, two, three = {"id": 1, "v": "a"}, {"id": 2, "v": "a"}, {"id": 3, "v": "a"}
    # offsets 0-2 inserts, 3 the delete of key 1, 4 its tombstone (a control event)
    messages = [t.insert(one), t.insert(two), t.insert(three), *t.delete(one)]
    lakehouse.ingest(t.envelopes(messages, first_offset=0), fmt="debezium-json")
    lakehouse.build()
    query = _accounting_query()
    assert lakehouse.rows(query) == []
    kinds = {r["kafka_offset"]: r["record_kind"] for r in lakehouse.rows(
        "select kafka_offset, record_kind from silver.cdc_parsed")}
    assert kinds == {0: "change", 1: "change", 2: "change", 3: "change", 4: "control"}

    lakehouse.spark.sql("delete from silver.cdc_parsed where kafka_offset = 1")
    _append(lakehouse, 0, kafka_offset=99)
    _append(lakehouse, 2, record_kind="quarantine")
    _append(lakehouse, 4)
    problems = {(r["offset"], r["problem"]) for r in lakehouse.rows(query)}
    assert problems == {
        (1, "bronze record with no outcome in silver"),
        (99, "silver outcome of no bronze record"),
        (2, "record ends in more than one kind of outcome"),
        (4, "control event or quarantine counted more than once"),
    }
