"""OceanBase OMS formats (oms-json, shareplex-json, oms-avro-json, debezium-smt) end to end.

One lakehouse is built once for the whole module (two ingest + build rounds) and every
test asserts on it:

* conformance: every example message of shared/formats/oceanbase-oms.txt for these formats,
  rewritten as valid JSON in tests/fixtures/<format>/doc_examples.jsonl, against the canonical
  rows in doc_examples.expected.json; plus quirk cases written here (exact values, key changes,
  partial updates, the rowid slip, configured keys, bytes, tombstones, broken messages);
* hard delivery: random histories of several tables per format, delivered in two batches
  with retries, duplicates and older changes arriving later, against the true final state.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cdc_messages import Raw, dumps, envelope
from oms_messages import (
    EXACT,
    STRINGS,
    OmsAvroTable,
    OmsJsonTable,
    SharePlexTable,
    SmtTable,
    hard_delivery,
    play_history,
    text,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FORMATS = ["oms-json", "shareplex-json", "oms-avro-json", "debezium-smt"]
#: ingest + build rounds; every ingest and build costs tens of seconds, so few but more than one
BATCHES = 2


def exact(value: Any) -> Any:
    """JSON text (or None) decoded with every number kept as its exact text."""
    return None if value is None else json.loads(value, parse_float=str, parse_int=str)


# ----------------------------------------------------------------------------- quirk cases
# (Kafka key, value, expected canonical row) per format; the topic is <format>_quirks.

def _oms_quirks() -> list[tuple[str | None, str | None, dict]]:
    meta = {"checkpoint": "1699999990", "record_primary_key": "id\u0001region",
            "record_primary_value": "7\u0001eu", "dbType": "OB_MYSQL", "storeDataSequence": Raw("170000000000001"),
            "table_name": "q", "db": "tenant1.shop", "timestamp": "1700000000", "transId": "1001_7"}
    row7 = {"id": 7, "region": "eu", "amount": Raw("1.25E-10"), "tiny": Raw("0E-24"),
            "big": Raw("123456789012345678901234567890123456789012345678901234567890.12345"),
            "s": "quote \" \u4e2d \U0001F600 \u003d", "flag": Raw("true"), "nothing": None}
    row8 = {**row7, "id": 8, "s": "moved"}
    older = {**row8, "s": "older full-load row"}
    return [
        (None, dumps({"allMetaData": meta, "prevStruct": None, "postStruct": row7, "recordType": "INSERT"}),
         {"kind": "change", "op": "c", "source_database": "shop", "pk": {"id": "7", "region": "eu"},
          "after": {"id": "7", "region": "eu", "amount": "1.25E-10", "tiny": "0E-24",
                    "big": "123456789012345678901234567890123456789012345678901234567890.12345",
                    "s": "quote \" \u4e2d \U0001F600 =", "flag": True, "nothing": None},
          "vendor_sequence": "170000000000001", "transaction_id": "1001_7", "event_time": "2023-11-14 22:13:20"}),
        (None, dumps({"allMetaData": {**meta, "record_primary_value": "8\u0001eu",
                                      "storeDataSequence": Raw("170000000100002"), "timestamp": "1700000001"},
                      "prevStruct": row7, "postStruct": row8, "recordType": "UPDATE"}),
         {"kind": "change", "op": "u", "pk": {"id": "8", "region": "eu"}, "before_pk": {"id": "7", "region": "eu"},
          "after": {**exact(dumps(row8))}}),
        # a full-load row of key 8 landed after the incremental update: full load sorts first
        (None, dumps({"allMetaData": {**meta, "record_primary_value": "8\u0001eu", "storeDataSequence": None,
                                      "timestamp": None, "checkpoint": "id=8\u0001region=eu"},
                      "prevStruct": None, "postStruct": older, "recordType": "ROW"}),
         {"kind": "change", "op": "r", "phase": "0", "event_time": None}),
        (None, dumps({"allMetaData": {"checkpoint": "1700000009", "dbType": "OB_MYSQL", "timestamp": "1700000009",
                                      "db": None, "table_name": None, "storeDataSequence": None},
                      "recordType": "HEARTBEAT"}),
         {"kind": "control", "control_kind": "heartbeat", "event_time": "2023-11-14 22:13:29"}),
        # a table without a key (record_primary_key null), a MySQL source: db is the database
        (None, dumps({"allMetaData": {**meta, "record_primary_key": None, "record_primary_value": None,
                                      "dbType": "MYSQL", "db": "plain", "table_name": "nokey"},
                      "prevStruct": None, "postStruct": {"a": 1, "b": "x"}, "recordType": "INSERT"}),
         {"kind": "change", "source_database": "plain", "source_table": "nokey", "pk": {"a": "1", "b": "x"}}),
        (None, dumps({"allMetaData": meta, "postStruct": row7, "recordType": "MERGE"}),
         {"kind": "quarantine", "reason": 'unknown op "MERGE" for format oms-json'}),
        (None, '{"allMetaData": {"db": "t.d"}, "postStruct": {"a": 1}, "recordType": "INS',
         {"kind": "quarantine", "reason": "invalid JSON"}),
        (None, dumps({"allMetaData": meta, "postStruct": row7}),
         {"kind": "quarantine", "reason": "shape does not match oms-json: no recordType"}),
        (None, dumps({"allMetaData": meta, "prevStruct": None, "postStruct": None, "recordType": "INSERT"}),
         {"kind": "quarantine", "reason": "shape does not match oms-json: INSERT without postStruct"}),
        (None, dumps({"allMetaData": {**meta, "record_primary_value": "7"}, "postStruct": row7,
                      "recordType": "INSERT"}),
         {"kind": "quarantine",
          "reason": "shape does not match oms-json: record_primary_key names 2 columns "
                    "but record_primary_value holds 1 values"}),
        (None, dumps({"allMetaData": {**meta, "table_name": None}, "postStruct": row7, "recordType": "INSERT"}),
         {"kind": "quarantine", "reason": "no table: the message names no source table"}),
    ]


def _shareplex_quirks() -> list[tuple[str | None, str | None, dict]]:
    def meta(op: str, table: str, rowid: str, scn: str) -> dict:
        return {"op": op, "time": "2023-11-14T22:13:20", "table": table, "rowid": f"{table}-{rowid}",
                "trans": "t1", "scn": scn, "seq": 1, "idx": "1/1", "size": 1}
    order = {"order_no": 901, "item": "a", "qty": Raw("1.25E-10")}
    return [
        # inventory.orders_without_key has configured key columns (seeds/cdc_key_overrides.csv)
        (None, dumps({"data": order, "meta": meta("ins", "inventory.orders_without_key", "901", "170000000000001")}),
         {"kind": "change", "op": "c", "pk": {"order_no": "901"},
          "after": {"order_no": "901", "item": "a", "qty": "1.25E-10"}}),
        (None, dumps({"data": {"order_no": 902}, "key": order,
                      "meta": meta("upd", "inventory.orders_without_key", "902", "170000000000002")}),
         {"kind": "change", "op": "u", "pk": {"order_no": "902"}, "before_pk": {"order_no": "901"},
          "before": {"order_no": "901", "item": "a", "qty": "1.25E-10"},
          "after": {"order_no": "902", "item": "a", "qty": "1.25E-10"}}),
        # a composite key whose rowid carries the separator, then lacks it (SPEC known slip)
        (None, dumps({"data": {"id": 5, "region": "eu", "v": "one", "n": None},
                      "meta": meta("ins", "shop.t", "5\u0001eu", "170000000100001")}),
         {"kind": "change", "op": "c", "source_database": "shop", "source_table": "t", "pk": {"rowid": "5eu"},
          "vendor_sequence": "170000000100001"}),
        (None, dumps({"data": {"v": "two", "n": 3}, "key": {"id": 5, "region": "eu", "v": "one", "n": None},
                      "meta": meta("upd", "shop.t", "5eu", "170000000100002")}),
         {"kind": "change", "op": "u", "pk": {"rowid": "5eu"}, "before_pk": None,
          "after": {"id": "5", "region": "eu", "v": "two", "n": "3"}}),
        (None, dumps({"data": {"v": "lost"}, "meta": meta("upd", "shop.t", "5\u0001eu", "170000000100003")}),
         {"kind": "quarantine",
          "reason": "shape does not match shareplex-json: upd without key "
                    "(the before image that completes the changed columns of data)"}),
        (None, dumps({"data": {"v": 1}, "meta": meta("merge", "shop.t", "5", "170000000100004")}),
         {"kind": "quarantine", "reason": 'unknown op "merge" for format shareplex-json'}),
        (None, dumps({"data": {"v": 1}}),
         {"kind": "quarantine", "reason": "shape does not match shareplex-json: no meta"}),
        (None, "not json at all", {"kind": "quarantine", "reason": "invalid JSON"}),
    ]


def _avro_quirks() -> list[tuple[str | None, str | None, dict]]:
    fields = [{"name": "code", "dataTypeNumber": 253}, {"name": "id", "dataTypeNumber": 8},
              {"name": "price", "dataTypeNumber": 246}, {"name": "name", "dataTypeNumber": 15},
              {"name": "raw", "dataTypeNumber": 252}, {"name": "ts", "dataTypeNumber": 7},
              {"name": "note", "dataTypeNumber": 15}, {"name": "doc", "dataTypeNumber": 245}]
    text_bytes = "CJK \u4e2d \U0001F600 quote \"".encode("utf-8").decode("latin-1")

    def msg(op: str, before: list | None, after: list | None, pos: str, id_: str, **extra: Any) -> str:
        return dumps({"version": 1, "id": Raw(id_), "sourceTimestamp": 1700000000, "sourcePosition": pos,
                      "safeSourcePosition": pos, "sourceTxid": "tx-9", "source": {"sourceType": "MySQL"},
                      "operation": op, "objectName": "shop.quirk_items", "processTimestamps": [1700000000500],
                      "tags": {"pk_uk_info": json.dumps({"uk_code": ["code"]})}, "fields": fields,
                      "beforeImages": before, "afterImages": after, **extra})
    a = [{"charset": "utf8mb4", "value": {"bytes": "A1"}}, {"precision": 8, "value": "1"},
         {"value": "1.25E-10", "precision": 65, "scale": 30}, {"charset": "utf8mb4", "value": {"bytes": text_bytes}},
         {"type": "BLOB", "value": {"bytes": "\u0001\u00ff\u0080"}}, {"timestamp": 1700000000, "millis": 5},
         None, {"type": "JSON", "value": "{\"bytes\": \"not bytes\"}"}]
    b = [{"charset": "utf8mb4", "value": {"bytes": "B2"}}, *a[1:]]
    return [
        (None, msg("INSERT", None, a, "1700000000", "170000000000000001"),
         {"kind": "change", "op": "c", "source_database": "shop", "source_table": "quirk_items", "pk": {"code": "A1"},
          "after": {"code": "A1", "id": "1", "price": "1.25E-10", "name": "CJK \u4e2d \U0001F600 quote \"",
                    "raw": base64.b64encode(b"\x01\xff\x80").decode(), "ts": '{"timestamp":1700000000,"millis":5}',
                    "note": None, "doc": "{\"bytes\": \"not bytes\"}"},
          "transaction_id": "tx-9", "vendor_sequence": "1700000000/170000000000000001",
          "column_types": {"code": {"type": "VAR_STRING", "dataTypeNumber": "253", "charset": "utf8mb4"},
                           "id": {"type": "LONGLONG", "dataTypeNumber": "8", "precision": "8"},
                           "price": {"type": "NEWDECIMAL", "dataTypeNumber": "246", "precision": "65", "scale": "30"},
                           "name": {"type": "VARCHAR", "dataTypeNumber": "15", "charset": "utf8mb4"},
                           "raw": {"type": "BLOB", "dataTypeNumber": "252"},
                           "ts": {"type": "TIMESTAMP", "dataTypeNumber": "7"},
                           "note": {"type": "VARCHAR", "dataTypeNumber": "15"},
                           "doc": {"type": "JSON", "dataTypeNumber": "245"}}}),
        (None, msg("UPDATE", a, b, "1700000001", "170000000100000002"),
         {"kind": "change", "op": "u", "pk": {"code": "B2"}, "before_pk": {"code": "A1"}}),
        (None, msg("UPDATE", a, b[:3], "1700000002", "170000000200000003"),
         {"kind": "quarantine", "reason": "shape does not match oms-avro-json: 8 fields but 3 afterImages"}),
        (None, msg("MERGE", None, a, "1700000003", "170000000300000004"),
         {"kind": "quarantine", "reason": 'unknown op "MERGE" for format oms-avro-json'}),
        (None, msg("DELETE", None, None, "1700000004", "170000000400000005"),
         {"kind": "quarantine", "reason": "shape does not match oms-avro-json: DELETE without beforeImages"}),
        (None, dumps({"version": 1, "fields": fields}),
         {"kind": "quarantine", "reason": "shape does not match oms-avro-json: no operation"}),
        (None, '{"version": 1, "operation": "INSERT", "fields": [', {"kind": "quarantine", "reason": "invalid JSON"}),
    ]


def _smt_quirks() -> list[tuple[str | None, str | None, dict]]:
    schema_value = dumps({
        "schema": {"type": "struct", "name": "oms_smt.shop.quirks.Value", "fields": [
            {"field": "id", "type": "int64", "optional": False},
            {"field": "amount", "type": "string", "optional": True},
            {"field": "__deleted", "type": "string", "optional": True}]},
        "payload": {"id": Raw("10223372036854775806"), "amount": "1.25E-10", "__deleted": "false"}})
    key = dumps({"schema": {"type": "struct"}, "payload": {"id": Raw("10223372036854775806")}})
    return [
        (key, schema_value,
         {"kind": "change", "op": "u", "source_database": "shop", "source_table": "quirks",
          "pk": {"id": "10223372036854775806"}, "after": {"id": "10223372036854775806", "amount": "1.25E-10"},
          "column_types": {"id": {"type": "int64"}, "amount": {"type": "string"}, "__deleted": {"type": "string"}}}),
        (key, None, {"kind": "change", "op": "d", "vendor_op": "<tombstone>", "pk": {"id": "10223372036854775806"}}),
        # the JSON converter with schemas writes the SMT's tombstone (its default for a delete)
        # as an envelope around a null payload: a delete, not a row of "schema" and "payload"
        (key, dumps({"schema": {"type": "struct", "name": "oms_smt.shop.quirks.Value", "fields": []}, "payload": None}),
         {"kind": "change", "op": "d", "vendor_op": "<tombstone>", "pk": {"id": "10223372036854775806"}}),
        (None, None, {"kind": "control", "control_kind": "tombstone"}),
        # add.fields=op,table,db: the SMT's own fields name the op and table, never columns
        (None, dumps({"id": 4, "name": "x", "__op": "r", "__table": "other", "__db": "otherdb",
                      "__source_ts_ms": 1700000000000, "__deleted": "false"}),
         {"kind": "change", "op": "r", "vendor_op": "r", "phase": "0", "source_database": "otherdb",
          "source_table": "other", "pk": {"id": "4", "name": "x"}, "after": {"id": "4", "name": "x"},
          "event_time": "2023-11-14 22:13:20"}),
        (None, dumps({"id": 5, "__deleted": "maybe"}),
         {"kind": "quarantine", "reason": 'unknown op "maybe" for format debezium-smt'}),
        (None, "[1, 2]",
         {"kind": "quarantine", "reason": "shape does not match debezium-smt: the value is not a JSON object"}),
        (None, '{"id": 5, "__deleted": "tr', {"kind": "quarantine", "reason": "invalid JSON"}),
    ]


QUIRKS = {"oms-json": _oms_quirks, "shareplex-json": _shareplex_quirks,
          "oms-avro-json": _avro_quirks, "debezium-smt": _smt_quirks}
QUIRK_TOPICS = {"oms-json": "oms_json_quirks", "shareplex-json": "shareplex_quirks",
                "oms-avro-json": "oms_avro_quirks", "debezium-smt": "oms_smt.shop.quirks"}


# ----------------------------------------------------------------------------- scenarios

def _scenarios() -> list[SimpleNamespace]:
    """Per format, tables with a random history, their truth and their hard-delivered batches."""
    out = []

    def account(rng, ident, version):
        return {"id": ident, "balance": rng.choice(EXACT), "note": rng.choice(STRINGS), "version": version}

    accounts = OmsJsonTable("t1", "bank", "accounts", ["id"])
    truth = play_history(accounts, 11, account, initial=5)
    accounts.heartbeat()
    accounts.ddl("ALTER TABLE accounts ADD COLUMN note2 VARCHAR(10)")
    accounts.heartbeat()
    out.append(SimpleNamespace(fmt="oms-json", table="accounts", topic="oms.bank.accounts", truth=truth,
                               batches=hard_delivery("oms.bank.accounts", accounts.messages, 11, BATCHES)))

    def ledger(rng, ident, version):
        return {"id": ident, "region": rng.choice(["eu", "us"]), "amount": rng.choice(EXACT), "version": version}

    ledger_t = OmsJsonTable("t1", "bank", "ledger", ["id", "region"], padded=False,
                            light_types={"id": "INT", "region": "VARCHAR", "amount": "DECIMAL", "version": "INT"})
    truth = play_history(ledger_t, 12, ledger, initial=3)
    out.append(SimpleNamespace(fmt="oms-json", table="ledger", topic="oms.bank.ledger", truth=truth,
                               batches=hard_delivery("oms.bank.ledger", ledger_t.messages, 12, BATCHES)))

    def sp_row(rng, ident, version):
        # the key (id, region) never changes: a rowid key cannot see key changes
        return {"id": ident, "region": ["eu", "us"][ident % 2], "amount": rng.choice(EXACT),
                "note": rng.choice(STRINGS), "flag": rng.choice([None, 1]), "version": version}

    sp = SharePlexTable("shop", "sp_orders", ["id", "region"], drop_separator=0.3)
    truth = play_history(sp, 13, sp_row, key_changes=False, key_of=lambda r: (("rowid", sp.rowid_key(r)),))
    sp.ddl("ALTER TABLE sp_orders ADD COLUMN c90 VARCHAR(30)")
    out.append(SimpleNamespace(fmt="shareplex-json", table="sp_orders", topic="shareplex.orders", truth=truth,
                               batches=hard_delivery("shareplex.orders", sp.messages, 13, BATCHES)))

    def inv_row(rng, ident, version):
        return {"order_no": ident, "item": rng.choice(STRINGS), "qty": rng.choice(EXACT), "version": version}

    inv = SharePlexTable("inventory", "orders_without_key", ["order_no"])
    truth = play_history(inv, 14, inv_row, key_changes=True)
    out.append(SimpleNamespace(fmt="shareplex-json", table="orders_without_key", topic="shareplex.inventory",
                               truth=truth, batches=hard_delivery("shareplex.inventory", inv.messages, 14, BATCHES)))

    items = OmsAvroTable("shop", "items", ["id"], {"id": (8, "int"), "price": (246, "decimal"),
                                                  "name": (15, "text"), "payload": (252, "blob"),
                                                  "version": (3, "int")})

    def item(rng, ident, version):
        return {"id": ident, "price": text(rng.choice(EXACT)), "name": rng.choice(STRINGS),
                "payload": rng.choice([None, b"\x00\x01binary\xff", "\u4e2d".encode()]), "version": version}

    truth = play_history(items, 15, item, initial=4)
    items.ddl("alter table items add column c1 int")
    truth = {k: items.expected(r) for k, r in truth.items()}
    out.append(SimpleNamespace(fmt="oms-avro-json", table="items", topic="avro.shop.items", truth=truth,
                               batches=hard_delivery("avro.shop.items", items.messages, 15, BATCHES)))

    customers = SmtTable("oms_smt", "shop", "customers", ["id"])

    def customer(rng, ident, version):
        return {"id": ident, "email": rng.choice(STRINGS), "score": rng.choice(EXACT), "version": version}

    truth = play_history(customers, 16, customer)
    # no source position in the format: Kafka order is the order, so offsets keep source order
    out.append(SimpleNamespace(fmt="debezium-smt", table="customers", topic=customers.topic, truth=truth,
                               batches=hard_delivery(customers.topic, customers.messages, 16, BATCHES,
                                                     reorder_offsets=False)))
    for s in out:
        s.truth = {k: {c: text(v) for c, v in row.items()} for k, row in s.truth.items()}
    return out


def _doc_lines(fmt: str) -> tuple[str, list[str]]:
    """The document's examples of ``fmt`` as kcat -J envelopes (topic, lines)."""
    raw = (FIXTURES / fmt / "doc_examples.jsonl").read_text(encoding="utf-8").splitlines()
    if fmt == "debezium-smt":  # already envelopes: the key matters
        return json.loads(raw[0])["topic"], raw
    topic = f"{fmt.replace('-', '_')}_doc"
    return topic, [envelope(topic, 0, i, None, line) for i, line in enumerate(raw)]


@pytest.fixture(scope="module")
def built(_shared_lakehouse):
    """The lakehouse after the ingest + build rounds of everything this module checks."""
    lakehouse = _shared_lakehouse
    lakehouse.reset()
    scenarios = _scenarios()
    rounds: list[dict[str, list[str]]] = [{f: [] for f in FORMATS} for _ in range(BATCHES)]
    for fmt in FORMATS:
        rounds[0][fmt] += _doc_lines(fmt)[1]
        topic = QUIRK_TOPICS[fmt]
        rounds[0][fmt] += [envelope(topic, 0, i, k, v) for i, (k, v, _) in enumerate(QUIRKS[fmt]())]
    for s in scenarios:
        for i, batch in enumerate(s.batches):
            rounds[i][s.fmt] += batch
    for i, lines_by_format in enumerate(rounds):
        for fmt, lines in lines_by_format.items():
            if lines:
                lakehouse.ingest(lines, fmt=fmt)
        lakehouse.build(tests=i == len(rounds) - 1)
    return SimpleNamespace(lakehouse=lakehouse, scenarios=scenarios)


# ----------------------------------------------------------------------------- checks

COLUMNS = {"kind": "record_kind", "control_kind": "control_kind", "op": "op", "vendor_op": "vendor_op",
           "source_database": "source_database", "source_table": "source_table", "statement": "statement",
           "transaction_id": "transaction_id", "vendor_sequence": "vendor_sequence", "reason": "quarantine_reason"}
JSON_COLUMNS = {"pk": "pk", "before_pk": "before_pk", "before": "before_image", "after": "after_image",
                "column_types": "column_types"}


def _check_rows(lakehouse, topic: str, expectations: list[dict]) -> list[str]:
    """Differences between the silver rows of ``topic`` (by offset) and ``expectations``."""
    got = {r["kafka_offset"]: r for r in lakehouse.rows(
        f"select * from silver.cdc_parsed where kafka_topic = '{topic}'")}
    problems = []
    for offset, want in enumerate(expectations):
        row = got.get(offset)
        case = want.get("case", f"offset {offset}")
        if row is None:
            problems.append(f"{topic} {case}: no silver row")
            continue
        for name, value in want.items():
            if name in COLUMNS:
                actual = row[COLUMNS[name]]
            elif name in JSON_COLUMNS:
                actual = exact(row[JSON_COLUMNS[name]])
                value = exact(json.dumps(value)) if value is not None else None
            elif name == "phase":
                actual = row["apply_order"][0]
            elif name == "event_time":
                actual = None if row["event_time"] is None else str(row["event_time"])
            else:
                continue
            if actual != value:
                problems.append(f"{topic} {case}: {name} = {actual!r}, expected {value!r}")
    if len(got) != len(expectations):
        problems.append(f"{topic}: {len(got)} silver rows for {len(expectations)} messages")
    return problems


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_document_example_gives_its_canonical_change(built, fmt):
    expected = json.loads((FIXTURES / fmt / "doc_examples.expected.json").read_text(encoding="utf-8"),
                          parse_float=str, parse_int=str)
    topic, _ = _doc_lines(fmt)
    assert _check_rows(built.lakehouse, topic, expected["rows"]) == []
    for table, rows in expected["final_state"].items():
        state = built.lakehouse.current_state(table)
        assert sorted(map(json.dumps, state.values())) == sorted(map(json.dumps, rows))


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirks_and_broken_messages(built, fmt):
    expectations = [want for _, _, want in QUIRKS[fmt]()]
    assert _check_rows(built.lakehouse, QUIRK_TOPICS[fmt], expectations) == []


def test_oms_full_load_row_never_overwrites_an_incremental_change(built):
    # the ROW of key 8 landed after the UPDATE that created key 8: the update's row stays
    state = built.lakehouse.current_state("q")
    assert {json.dumps(exact(pk), sort_keys=True) for (_, pk) in state} == {'{"id": "8", "region": "eu"}'}
    assert next(iter(state.values()))["s"] == "moved"


def test_shareplex_partial_update_is_completed_and_configured_key_changes(built):
    # rowid 5\u0001eu then 5eu (the slip): one key; the partial update completed from `key`
    assert list(built.lakehouse.current_state("t").values()) == [{"id": "5", "region": "eu", "v": "two", "n": "3"}]
    # a configured key sees the key change: 901 is gone, 902 holds the completed row
    state = built.lakehouse.current_state("orders_without_key")
    assert ("orders_without_key", '{"order_no":901}') not in state
    assert state[("orders_without_key", '{"order_no":902}')] == {"order_no": "902", "item": "a", "qty": "1.25E-10"}


@pytest.mark.parametrize("table", ["accounts", "ledger", "sp_orders", "orders_without_key", "items", "customers"])
def test_hard_delivery_gives_the_true_final_state(built, table):
    s = next(s for s in built.scenarios if s.table == table)
    state = built.lakehouse.current_state(s.table)
    got = {tuple((k, v) for k, v in exact(pk).items()): row for (_, pk), row in state.items()}
    truth = dict(s.truth)
    if s.table == "orders_without_key":  # the quirk cases share this configured table
        truth[(("order_no", "902"),)] = {"order_no": "902", "item": "a", "qty": "1.25E-10"}
    assert got == truth, f"{s.fmt} {s.table}"


def test_control_events_and_accounting(built):
    lakehouse = built.lakehouse
    # retries re-produce events at new offsets: count distinct events, not records
    control = {(r["source_format"], r["control_kind"]): r["n"] for r in lakehouse.rows(
        "select source_format, control_kind, count(distinct kafka_topic, coalesce(statement, ''), "
        "coalesce(cast(event_time as string), ''), "
        "coalesce(case when control_kind = 'tombstone' then cast(kafka_offset as string) end, '')) as n "
        "from silver.cdc_control_events group by 1, 2")}
    assert control == {
        ("oms-json", "heartbeat"): 3,  # the quirk case and the scenario's two
        ("oms-json", "ddl"): 3,  # two document examples and the scenario's
        ("shareplex-json", "ddl"): 2,
        ("oms-avro-json", "ddl"): 2,
        ("debezium-smt", "tombstone"): 1,  # keyless; a tombstone with a key is a delete
    }

    # SPEC rule 8: every bronze record of these formats ends in exactly one kind
    bronze = lakehouse.rows("select count(*) as n from (select distinct topic, partition, offset "
                            "from bronze.kafka_records)")[0]["n"]
    parsed = lakehouse.rows("select count(distinct kafka_topic, kafka_partition, kafka_offset) as n "
                            "from silver.cdc_parsed")[0]["n"]
    mixed = lakehouse.rows("select kafka_topic, kafka_offset from silver.cdc_parsed "
                           "group by kafka_topic, kafka_partition, kafka_offset having count(distinct record_kind) > 1")
    assert parsed == bronze and mixed == []
