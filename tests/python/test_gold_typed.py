"""Typed gold views, schema evolution and SCD2 history, from Debezium messages with a schema."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

from cdc_messages import Raw, dumps, envelope

TOPIC = "shop.sales.typed"

FIELDS = [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "qty", "type": "int32", "optional": True},
    {"field": "price", "type": "bytes", "optional": True,
     "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "4", "connect.decimal.precision": "12"}},
    {"field": "ratio", "type": "float64", "optional": True},
    {"field": "active", "type": "boolean", "optional": True},
    {"field": "born", "type": "int32", "optional": True, "name": "io.debezium.time.Date"},
    {"field": "seen", "type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp"},
    {"field": "blob", "type": "bytes", "optional": True},
    {"field": "label", "type": "string", "optional": True},
]


def _decimal_bytes(unscaled: int) -> str:
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def _message(op: str, before: dict | None, after: dict | None, pos: int, fields: list[dict],
             table: str = "typed") -> str:
    schema = {"type": "struct", "fields": [
        {"field": "before", "type": "struct", "fields": fields, "optional": True},
        {"field": "after", "type": "struct", "fields": fields, "optional": True},
        {"field": "source", "type": "struct", "fields": []},
        {"field": "op", "type": "string"},
    ]}
    payload = {"before": before, "after": after, "op": op, "ts_ms": 1_700_000_000_000 + pos,
               "source": {"db": "sales", "table": table, "file": "binlog.000001",
                          "pos": pos, "row": 0, "ts_ms": 1_700_000_000_000 + pos * 1000}}
    return dumps({"schema": schema, "payload": payload})


def _key(row_id: int) -> str:
    return json.dumps({"id": row_id})


def test_typed_views_history_and_schema_evolution(lakehouse):
    row1 = {"id": Raw("9007199254740993"), "qty": 3, "price": _decimal_bytes(-1234567),
            "ratio": Raw("0.25"), "active": True, "born": Raw("-365"),
            "seen": Raw("1700000000123456"), "blob": base64.b64encode(b"\x00\xff").decode(),
            "label": "caf\u00e9 \U0001F600"}
    row2 = {**row1, "id": 2, "qty": 4, "price": _decimal_bytes(99990000), "label": "two"}
    row1b = {**row1, "qty": 30}
    first = [
        envelope(TOPIC, 0, 0, _key(9007199254740993), _message("c", None, row1, 100, FIELDS)),
        envelope(TOPIC, 0, 1, _key(2), _message("c", None, row2, 200, FIELDS)),
        envelope(TOPIC, 0, 2, _key(9007199254740993), _message("u", row1, row1b, 300, FIELDS)),
    ]
    lakehouse.ingest(first, fmt="debezium-json")
    lakehouse.build(tests=False)

    tables = {r["tableName"] for r in lakehouse.rows("show tables in gold")}
    assert {"sales__typed", "sales__typed__history"} <= tables
    types = {r["col_name"]: r["data_type"] for r in lakehouse.rows("describe gold.sales__typed")}
    assert types["id"] == "bigint" and types["qty"] == "int" and types["price"] == "decimal(12,4)"
    assert types["born"] == "date" and types["seen"] == "timestamp" and types["blob"] == "binary"
    assert types["active"] == "boolean" and types["ratio"] == "double" and types["label"] == "string"

    rows = {r["id"]: r for r in lakehouse.rows("select * from gold.sales__typed")}
    one = rows[9007199254740993]
    assert one["qty"] == 30 and one["price"] == decimal.Decimal("-123.4567")
    assert one["born"] == dt.date(1969, 1, 1) and one["blob"] == bytearray(b"\x00\xff")
    assert one["seen"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)
    assert one["active"] is True and one["label"] == "caf\u00e9 \U0001F600"
    assert rows[2]["price"] == decimal.Decimal("9999.0000")
    typed_versions = "describe history gold.cdc_typed_columns"
    assert len(lakehouse.rows(typed_versions)) == 1

    # a column added at the source: earlier rows read NULL; a delete closes the history
    fields2 = [*FIELDS, {"field": "nickname", "type": "string", "optional": True}]
    row3 = {**row2, "id": 3, "nickname": "new"}
    second = [
        envelope(TOPIC, 0, 3, _key(3), _message("c", None, row3, 400, fields2)),
        envelope(TOPIC, 0, 4, _key(2), _message("d", row2, None, 500, FIELDS)),
    ]
    lakehouse.ingest(second, fmt="debezium-json")
    lakehouse.build()
    rows = {r["id"]: r for r in lakehouse.rows("select * from gold.sales__typed")}
    assert set(rows) == {9007199254740993, 3}
    assert rows[3]["nickname"] == "new" and rows[9007199254740993]["nickname"] is None
    # the typed view holds the rows of gold.cdc_current_state, with its metadata
    current = lakehouse.rows("select pk, last_op, last_event_time, vendor_sequence, source_format "
                             "from gold.cdc_current_state where source_table = 'typed'")
    typed = lakehouse.rows("select _cdc_pk, _cdc_last_op, _cdc_last_event_time, _cdc_vendor_sequence, "
                           "_cdc_source_format from gold.sales__typed")
    assert sorted(tuple(r.values()) for r in typed) == sorted(tuple(r.values()) for r in current)
    assert {r["_cdc_last_op"] for r in typed} == {"c", "u"}
    # a new column: the typed columns' table is written again; built again with no new column,
    # it is left as it is (no commit) and its views still answer
    assert len(lakehouse.rows(typed_versions)) == 2
    lakehouse.build("--select", "cdc_typed_columns", tests=False)
    assert len(lakehouse.rows(typed_versions)) == 2
    assert "nickname" in {r["column_name"] for r in lakehouse.rows("select column_name from gold.cdc_typed_columns")}
    assert {r["id"] for r in lakehouse.rows("select id from gold.sales__typed")} == {9007199254740993, 3}
    # what the views were created from is recorded in gold's database properties, not in a
    # commit of the table; a typed view dropped by hand is there again after the next build
    properties = {r["info_name"]: r["info_value"] for r in lakehouse.rows("describe database extended gold")}
    assert "(cdc.typed_views," in properties["Properties"]
    lakehouse.spark.sql("drop view gold.sales__typed__history")
    lakehouse.build("--select", "cdc_typed_columns", tests=False)
    assert len(lakehouse.rows(typed_versions)) == 2
    assert "sales__typed__history" in {r["viewName"] for r in lakehouse.rows("show views in gold")}

    history = lakehouse.rows(
        "select id, qty, _cdc_valid_from, _cdc_valid_to, _cdc_is_current "
        "from gold.sales__typed__history order by id, _cdc_valid_from"
    )
    by_id: dict[int, list] = {}
    for r in history:
        by_id.setdefault(r["id"], []).append(r)
    assert [r["qty"] for r in by_id[9007199254740993]] == [3, 30]
    assert by_id[9007199254740993][0]["_cdc_valid_to"] == by_id[9007199254740993][1]["_cdc_valid_from"]
    assert [r["_cdc_is_current"] for r in by_id[9007199254740993]] == [False, True]
    # key 2 lived from its insert until its delete
    assert len(by_id[2]) == 1 and by_id[2][0]["_cdc_valid_to"] is not None
    assert not by_id[2][0]["_cdc_is_current"]
    as_of = lakehouse.rows(
        "select pk from gold.cdc_history where source_table = 'typed' and row is not null "
        "and valid_from <= timestamp'2023-11-14 22:17:00' "
        "and (valid_to > timestamp'2023-11-14 22:17:00' or valid_to is null)"
    )
    assert sorted(r["pk"] for r in as_of) == ['{"id":2}', '{"id":9007199254740993}']


DRIFT = "shop.sales.drift"


def _drift(pos: int, qty_type: str, offset: int, extra: dict | None = None) -> tuple:
    """An insert of key ``pos`` into sales.drift at binlog position ``pos``, its qty typed ``qty_type``."""
    fields = [{"field": "id", "type": "int64", "optional": False},
              {"field": "qty", "type": qty_type, "optional": True},
              *([{"field": name, "type": "string", "optional": True} for name in extra] if extra else [])]
    row = {"id": pos, "qty": str(pos) if qty_type == "string" else pos, **(extra or {})}
    return envelope(DRIFT, 0, offset, _key(pos), _message("c", None, row, pos, fields, table="drift"))


def _qty(lakehouse) -> dict:
    return lakehouse.rows("select type_json, previous_type_json, last_seen_order from gold.cdc_table_columns "
                          "where source_table = 'drift' and column_name = 'qty'")[0]


def test_a_column_keeps_the_type_of_its_newest_change_across_increments_that_change_nothing(lakehouse, tmp_path):
    """An increment that brings no new column and no new type leaves gold.cdc_table_columns as it
    is: the run records its watermark alone (and the typed columns are not read again), so
    a row's last_seen_order can be older than its column's newest change. A late change with
    another type must still lose to that newer change: the run that would move a type reads
    every change again."""
    lakehouse.ingest([_drift(100, "int32", 0)], fmt="debezium-json")
    lakehouse.build(tests=False)
    first = _qty(lakehouse)
    assert json.loads(first["type_json"])["type"] == "int32"

    # the same type, newer: nothing to change, no commit, the watermark recorded for the version
    # of the rows, the typed views left alone
    columns_before = lakehouse.rows("describe history gold.cdc_table_columns limit 1")[0]
    lakehouse.ingest([_drift(300, "int32", 1)], fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "same")
    assert "insert into meta.cdc_build_progress values ('gold.cdc_table_columns'" in log
    assert "merge into gold.cdc_table_columns" not in log
    assert "-- unchanged: its inputs are those of cdc.typed_specs in gold" in log
    assert lakehouse.rows("describe history gold.cdc_table_columns limit 1")[0] == columns_before
    newest = lakehouse.rows("select cast(max(ingested_at) as string) as t from bronze.kafka_records")[0]["t"]
    assert lakehouse.progress("gold.cdc_table_columns")["ingested_at"] == newest
    assert _qty(lakehouse) == first  # its last_seen_order left behind

    # a late change (position 200, older than 300) typed string: 300's int32 stays
    lakehouse.ingest([_drift(200, "string", 2)], fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "late")
    assert "merge into gold.cdc_table_columns" in log
    assert json.loads(_qty(lakehouse)["type_json"])["type"] == "int32"
    assert _qty(lakehouse)["last_seen_order"] > first["last_seen_order"]
    types = {r["col_name"]: r["data_type"] for r in lakehouse.rows("describe gold.sales__drift")}
    assert types["qty"] == "int"

    # a newer change typed int64: the type moves, the one before it is kept
    lakehouse.ingest([_drift(400, "int64", 3)], fmt="debezium-json")
    lakehouse.build(tests=False)
    qty = _qty(lakehouse)
    assert json.loads(qty["type_json"])["type"] == "int64" and json.loads(qty["previous_type_json"])["type"] == "int32"

    # a new column: the increment's MERGE, and the typed view gains it
    lakehouse.ingest([_drift(500, "int64", 4, {"note": "hello"})], fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "new-column")
    assert "merge into gold.cdc_table_columns" in log
    types = {r["col_name"]: r["data_type"] for r in lakehouse.rows("describe gold.sales__drift")}
    assert types["qty"] == "bigint" and types["note"] == "string"
    assert {r["id"]: r["note"] for r in lakehouse.rows("select id, note from gold.sales__drift")} == {
        100: None, 200: None, 300: None, 400: None, 500: "hello"}

    # after a property set by hand (a version no row describes) the next run scans for its
    # watermark and, not knowing what the rows hold, writes them; the run after it records only
    lakehouse.spark.sql("alter table gold.cdc_table_columns set tblproperties ('cdc_lakehouse.test' = 'yes')")
    lakehouse.ingest([_drift(600, "int64", 5, {"note": "x"})], fmt="debezium-json")
    assert "merge into gold.cdc_table_columns" in lakehouse.logged_build(tmp_path / "by-hand")
    lakehouse.ingest([_drift(700, "int64", 6, {"note": "y"})], fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "by-hand-then")
    assert "insert into meta.cdc_build_progress values ('gold.cdc_table_columns'" in log
    assert "merge into gold.cdc_table_columns" not in log
    assert "-- unchanged: its inputs are those of cdc.typed_specs in gold" in log


def test_docs_describe_every_model_and_column(lakehouse):
    """`dbt docs generate` over a built lakehouse: every model of the project and every column
    the catalog finds in its table has a description (the YAML beside the models)."""
    from conftest import PROJECT
    from dbt.cli.main import dbtRunner

    lines = [envelope(TOPIC, 0, 0, _key(1), _message("c", None, {"id": 1, "qty": 1}, 100, FIELDS[:2]))]
    lakehouse.ingest(lines, fmt="debezium-json")
    lakehouse.build(tests=False)
    target = lakehouse.root / "docs-target"
    result = dbtRunner().invoke(["docs", "generate", "--profiles-dir", str(PROJECT / "profiles"),
                                 "--project-dir", str(PROJECT), "--target-path", str(target), "--quiet"])
    assert result.success, result.exception
    manifest = json.loads((target / "manifest.json").read_text())
    catalog = json.loads((target / "catalog.json").read_text())
    models = {uid: node for uid, node in manifest["nodes"].items()
              if node["resource_type"] == "model" and node["package_name"] == "cdc_lakehouse"}
    assert len(models) >= 10
    missing = [uid for uid, node in models.items() if not node["description"].strip()]
    for uid, entry in catalog["nodes"].items():
        if uid in models:
            documented = {name.lower() for name, col in models[uid]["columns"].items() if col["description"].strip()}
            missing += [f"{uid}.{col}" for col in entry["columns"] if col.lower() not in documented]
    assert set(catalog["nodes"]) & set(models), "the catalog found none of the models"
    assert missing == []
