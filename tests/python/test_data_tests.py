"""The project's own data tests (macros/generic_tests/) find what they claim to: each is run on
a lakehouse that a build left whole, then on one broken on purpose, and every problem it reports
is checked by record or by key. The accounting identity (SPEC rule 8) finds each way a record
can be lost or counted twice; the history's consistency, gold against the latest change and the
strict apply order each way gold and silver can break."""

from __future__ import annotations

from cdc_messages import DebeziumTable
from conftest import DBT_TARGET
from pyspark.sql import functions as F

COMPILED = DBT_TARGET / "compiled" / "cdc_lakehouse" / "models"


def _compiled_test(properties: str, name: str) -> str:
    """The query of the data test whose compiled file name begins with ``name``, declared in
    the properties file ``properties`` (under models/), as the last build compiled it: the
    newest such file, since a test whose arguments changed leaves its earlier file beside it."""
    paths = COMPILED.glob(f"{properties}/{name}_*.sql")
    return max(paths, key=lambda path: path.stat().st_mtime).read_text("utf-8")


def _problems(lakehouse, query: str, *columns: str) -> set[tuple]:
    """The rows a data test's ``query`` reports, as tuples of ``columns``."""
    return {tuple(r[c] for c in columns) for r in lakehouse.rows(query)}


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
    query = _compiled_test("bronze/_bronze__sources.yml", "source_cdc_accounts_for_every")
    assert lakehouse.rows(query) == []
    kinds = {r["kafka_offset"]: r["record_kind"] for r in lakehouse.rows(
        "select kafka_offset, record_kind from silver.cdc_parsed")}
    assert kinds == {0: "change", 1: "change", 2: "change", 3: "change", 4: "control"}

    lakehouse.spark.sql("delete from silver.cdc_parsed where kafka_offset = 1")
    _append(lakehouse, 0, kafka_offset=99)
    _append(lakehouse, 2, record_kind="quarantine")
    _append(lakehouse, 4)
    assert _problems(lakehouse, query, "offset", "problem") == {
        (1, "bronze record with no outcome in silver"),
        (99, "silver outcome of no bronze record"),
        (2, "record ends in more than one kind of outcome"),
        (4, "control event or quarantine counted more than once"),
    }


def test_the_gold_data_tests_report_each_way_gold_can_break(lakehouse):
    """The history's consistency (macros/generic_tests/cdc_history_is_consistent.sql), gold
    against the latest change of every key (cdc_matches_latest_change) and the strict apply
    order (cdc_apply_order_is_strict), each run on a lakehouse a build left whole, then on one
    broken on purpose; every problem they report is checked by key. The history is put back
    (Delta's RESTORE) between the breaks, so that each test sees only its own."""
    t = DebeziumTable("dbserver1", "inventory", "broken", ["id"])
    one, two, three = {"id": 1, "v": "a"}, {"id": 2, "v": "a"}, {"id": 3, "v": "a"}
    b, c = {**one, "v": "b"}, {**one, "v": "c"}
    # key 1: three versions (insert, two updates); key 2: one; key 3: inserted, then deleted
    messages = [t.insert(one), t.insert(two), t.update(one, b), t.update(b, c), t.insert(three),
                *t.delete(three, tombstone=False)]
    lakehouse.ingest(t.envelopes(messages, first_offset=0), fmt="debezium-json")
    lakehouse.build()
    history = _compiled_test("gold/_gold__models.yml", "cdc_history_is_consistent")
    latest = _compiled_test("gold/_gold__models.yml", "cdc_matches_latest_change")
    strict = _compiled_test("silver/_silver__models.yml", "cdc_apply_order_is_strict")
    assert lakehouse.rows(history) == lakehouse.rows(latest) == lakehouse.rows(strict) == []
    whole = lakehouse.rows("describe history gold.cdc_history_versions")[0]["version"]
    whole_state = lakehouse.rows("describe history gold.cdc_current_state")[0]["version"]
    orders = {(r["pk"], r["v"]): r["apply_order"] for r in lakehouse.rows(
        "select pk, coalesce(get_json_object(row, '$.v'), op) as v, apply_order from gold.cdc_history")}
    key = {i: f'{{"id":{i}}}' for i in (1, 2, 3)}

    def restore() -> None:
        lakehouse.spark.sql(f"restore table gold.cdc_history_versions to version as of {whole}")
        lakehouse.spark.sql(f"restore table gold.cdc_current_state to version as of {whole_state}")
        assert lakehouse.rows(history) == lakehouse.rows(latest) == []

    # the history: key 1's first version ends a second late; key 1's middle version (ended) and
    # key 2's open one swap their current flags
    lakehouse.spark.sql("update gold.cdc_history_versions set valid_to = valid_to + interval 1 second "
                        f"where pk = '{key[1]}' and op = 'c'")
    lakehouse.spark.sql(f"update gold.cdc_history_versions set is_current = true where pk = '{key[1]}' and "
                        f"apply_order = '{orders[key[1], 'b']}'")
    lakehouse.spark.sql(f"update gold.cdc_history_versions set is_current = false where pk = '{key[2]}'")
    assert _problems(lakehouse, history, "pk", "apply_order", "problem") == {
        (key[1], orders[key[1], "a"], "interval does not end where the next begins"),
        (key[1], orders[key[1], "b"], "current version is not an open version with a row"),
        (key[1], orders[key[1], "c"], "more than one current version"),
        (key[2], orders[key[2], "a"], "open version with a row is not current"),
    }
    restore()

    # gold against silver: key 1's live row lost, key 2's row changed, deleted key 3 live again
    # (in gold.cdc_current_state, the table the test reads)
    lakehouse.spark.sql(f"delete from gold.cdc_current_state where pk = '{key[1]}'")
    lakehouse.spark.sql(f"update gold.cdc_current_state set row = '{{\"id\":2,\"v\":\"z\"}}' where pk = '{key[2]}'")
    lakehouse.spark.sql(
        "insert into gold.cdc_current_state select source_format, source_database, source_schema, source_table, "
        f"'{key[3]}', '{{\"id\":3,\"v\":\"a\"}}', 'c', last_event_time, vendor_sequence, apply_order, change_id, "
        f"unknown_columns, copy_number from gold.cdc_current_state where pk = '{key[2]}'")
    assert _problems(lakehouse, latest, "pk", "problem") == {
        (key[1], "expected in gold, missing or different"),
        (key[2], "expected in gold, missing or different"),
        (key[2], "in gold, but not the latest change of its key"),
        (key[3], "in gold, but not the latest change of its key"),
    }
    restore()

    # silver: a second change of key 2 with its insert's apply order (another offset), and
    # changes of key 3 whose apply orders are not ones (cdc_apply_order): not digits, a part
    # with a leading zero, a part longer than its count, a third phase, five parts, a line
    # terminator after the last. A part of 38 digits is one
    _append(lakehouse, 1, kafka_offset=97)
    malformed = ["1.010.x", "1.010.010.010.010.010.0201", "1.0112.010.010.010.010.010",
                 "2.010.010.010.010.010.010", "1.010.010.010.010.010", "1.010.010.010.010.010.010\n"]
    widest = "0.38" + "1" * 38 + ".010" * 5
    for offset, apply_order in enumerate([*malformed, widest], start=100):
        _append(lakehouse, 4, kafka_offset=offset, apply_order=apply_order)
    assert _problems(lakehouse, strict, "pk", "apply_order", "problem", "occurrences") == {
        (key[2], orders[key[2], "a"], "two changes of one key share an apply order", 2),
        *((key[3], apply_order, "malformed apply order", 1) for apply_order in malformed),
    }
