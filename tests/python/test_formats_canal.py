"""canal-json, drs-json, drs-json-c and cloudcanal-json through bronze, silver and gold; format detection.

Builds are slow, so one module-scoped lakehouse takes everything at once, in two ingest +
build rounds: streams written by each vendor's rules and delivered the hard way (older changes
at later offsets and in the later round, duplicates), the example messages of the vendor
documents (tests/fixtures/<format>/), the quirks, broken messages, messages of every format
without a configured format (detection), and the first round of Paimon's canal samples. The
tests then read silver and gold. The Paimon samples whose scenarios collide with that round
(same table and key, other history) run last, each round in an emptied lakehouse.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from canal_messages import TYPES, CanalTable, as_text, canal_history, dumps, paimon_messages, pk_json
from cdc_messages import Raw, envelope
from conftest import SHARED, InProcessLakehouse, needs_shared
from scenarios import hard_delivery

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HARD_FORMATS = ["canal-json", "drs-json", "drs-json-c", "cloudcanal-json"]
AMBIGUOUS = "ambiguous:canal-json,drs-json,drs-json-c"


def _loads(text: str) -> Any:
    return json.loads(text, parse_float=str, parse_int=str)


def _fixture_lines(fmt: str, name: str) -> list[str]:
    path = FIXTURES / fmt / f"{name}.jsonl"
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _envelopes(topic: str, values: list[str | None], first_offset: int = 0) -> list[str]:
    return [envelope(topic, 0, first_offset + i, None, v) for i, v in enumerate(values)]


# --- quirks and broken messages (canal-json) ---------------------------------------------

def _canal(table: str, typ: str, data: Any, old: Any = None, keys: Any = ("id",), es: int = 0,
           seq: int = 0, database: str = "quirks", **extra: Any) -> str:
    msg = {"data": data, "database": database, "es": Raw(str(1_690_000_000_000 + es)),
           "id": Raw(str(seq)), "isDdl": Raw("false"), "old": old,
           "pkNames": list(keys) if isinstance(keys, tuple) else keys, "sql": "",
           "table": table, "ts": Raw(str(1_690_000_000_500 + es)), "type": typ, **extra}
    return dumps(msg)


QUIRKS = [
    # several rows in one message, one change each, the UPDATE's old only the changed columns
    _canal("multi", "INSERT", [{"id": "1", "a": "x", "b": "1"}, {"id": "2", "a": "y", "b": "2"},
                               {"id": "3", "a": "z", "b": "3"}], es=1000, seq=1),
    _canal("multi", "UPDATE", [{"id": "1", "a": "x", "b": "10"}, {"id": "20", "a": "y", "b": "2"}],
           old=[{"b": "1"}, {"id": "2"}], es=2000, seq=2),
    _canal("multi", "DELETE", [{"id": "3", "a": "z", "b": "3"}], es=3000, seq=3),
    # pkNames `k1`, the row says `K1` (MySQL names are case-insensitive)
    _canal("cased", "INSERT", [{"K1": "7", "v": "seven"}], keys=["k1"], es=1000, seq=4),
    _canal("cased", "UPDATE", [{"K1": "7", "v": "SEVEN"}], old=[{"v": "seven"}], keys=["k1"],
           es=2000, seq=5),
    # a table without key: a multiset of rows; an UPDATE replaces its before image
    _canal("nokey", "INSERT", [{"v0": "a", "v1": "1"}, {"v0": "b", "v1": "2"}], keys=[], es=1000, seq=6),
    _canal("nokey", "UPDATE", [{"v0": "a", "v1": "100"}], old=[{"v1": "1"}], keys=[], es=2000, seq=7),
    _canal("nokey", "DELETE", [{"v0": "b", "v1": "2"}], keys=[], es=3000, seq=8),
    # TRUNCATE (a DDL in Canal) removes every older row of the table
    _canal("trunc", "INSERT", [{"id": "1"}, {"id": "2"}], es=1000, seq=9),
    dumps({"data": None, "database": "quirks", "es": Raw("1690000002000"), "id": Raw("10"),
           "isDdl": Raw("true"), "old": None, "pkNames": None, "sql": "TRUNCATE TABLE trunc",
           "table": "trunc", "type": "TRUNCATE"}),
    _canal("trunc", "INSERT", [{"id": "3"}], es=3000, seq=11),
    # the Kafka offset order is not the source order: `es` says the DELETE came last
    _canal("late", "DELETE", [{"id": "1", "v": "b"}], es=3000, seq=14),
    _canal("late", "UPDATE", [{"id": "1", "v": "b"}], old=[{"v": "a"}], es=2000, seq=13),
    _canal("late", "INSERT", [{"id": "1", "v": "a"}], es=1000, seq=12),
    # a Canal server restart starts `id` again from 1: `es` still orders
    _canal("restart", "INSERT", [{"id": "1", "v": "before restart"}], es=1000, seq=94),
    _canal("restart", "UPDATE", [{"id": "1", "v": "after restart"}], old=[{"v": "before restart"}],
           es=5000, seq=1),
    # a string of one NUL ("\u0000" in the JSON text) beside exact numbers: the numbers are
    # marked without losing it, and the NUL string is not taken for a marked number
    _canal("nul", "INSERT", [{"id": "1", "s": "\u0000", "n": Raw("9.999999999999999093266253")}],
           es=1000, seq=95),
    # a key column named twice, once in another case: one key column, not a failed run
    _canal("repeat", "INSERT", [{"id": "1", "v": "a"}], keys=["id", "id"], es=1000, seq=96),
    _canal("repeat", "UPDATE", [{"id": "1", "v": "b"}], old=[{"v": "a"}], keys=["id", "ID"],
           es=2000, seq=97),
    # type maps of another shape: read as text (the typed parse fails), the row still counts
    _canal("oddtypes", "INSERT", [{"id": "1"}], mysqlType="int(11)", sqlType=[4], es=1000, seq=98),
    None,  # a null value: a tombstone, a control event
]
QUIRK_STATE = {
    "multi": [{"id": "1", "a": "x", "b": "10"}, {"id": "20", "a": "y", "b": "2"}],
    "cased": [{"K1": "7", "v": "SEVEN"}],
    "nokey": [{"v0": "a", "v1": "100"}],
    "trunc": [{"id": "3"}],
    "late": [],
    "restart": [{"id": "1", "v": "after restart"}],
    "nul": [{"id": "1", "s": "\u0000", "n": "9.999999999999999093266253"}],
    "repeat": [{"id": "1", "v": "b"}],
    "oddtypes": [{"id": "1"}],
}

BROKEN = {
    "truncated": ('{"data":[{"id":"1"}],"database":"quirks","table":"broken","type":"INS',
                  "invalid JSON"),
    "garbage": ("not json at all", "invalid JSON"),
    "not-array": (_canal("broken", "INSERT", {"id": "1"}),
                  'shape does not match canal-json: "data" is not an array of rows'),
    "no-rows": (_canal("broken", "INSERT", []),
                'shape does not match canal-json: INSERT without rows in "data"'),
    "null-rows": (_canal("broken", "INSERT", None),
                  'shape does not match canal-json: INSERT without rows in "data"'),
    "bad-second-row": (_canal("broken", "INSERT", [{"id": "1"}, "oops"]),
                       'shape does not match canal-json: row 1 of "data" is not a JSON object'),
    "no-table": ('{"data":[{"id":"1"}],"type":"INSERT","pkNames":["id"]}',
                 "no table: the message names no source table"),
    "unknown-op": (_canal("broken", "UPSERT", [{"id": "1"}]),
                   'unknown op "UPSERT" for format canal-json'),
    "pk-not-array": (_canal("broken", "INSERT", [{"id": "1"}], keys="id"),
                     'shape does not match canal-json: "pkNames" is not an array of column names'),
    "null-row": (_canal("broken", "INSERT", [None]),
                 'shape does not match canal-json: row 0 of "data" is not a JSON object'),
    "old-not-array": (_canal("broken", "UPDATE", [{"id": "1"}], old="x"),
                      'shape does not match canal-json: "old" is not an array of rows'),
    "missing-key": (_canal("broken", "DELETE", [{"id": "1"}, {"x": "2"}]),
                    'no key: "pkNames" names "id", absent from the row image'),
    "debezium": ('{"before":null,"after":{"id":1},"source":{"table":"t"},"op":"c"}',
                 'shape does not match canal-json: no "type" (operation type) and not a DDL'),
}


# --- detection: one message of every format, no format configured --------------------------

_DETECT: dict[str, tuple[str, str | None]] = {
    "dataworks": ('{"schema":{"dataColumn":[{"name":"id","type":"LONG"}],"primaryKey":["id"],'
                  '"source":{"dbType":"MySQL","dbName":"d","tableName":"§"}},"payload":{"before":null,'
                  '"after":{"dataColumn":{"id":1}},"sequenceId":"1620457642589000000","timestamp":'
                  '{"eventTime":1620457896000},"op":"INSERT","ddl":null},"version":"0.0.1"}', "dataworks"),
    "dataworks-heartbeat": ('{"schema":{"dataColumn":null,"primaryKey":null,"source":null},"payload":'
                            '{"before":null,"after":null,"sequenceId":null,"timestamp":{"eventTime":'
                            '1620457659000},"op":"MHEARTBEAT","ddl":null},"version":"0.0.1"}', "dataworks"),
    "dataworks-v2": ('{"version":"2.0","schema":{"source":{"dbType":"mysql","dbName":"d","table":"§"},'
                     '"column":[{"name":"id","type":"bigint"}],"pk":["id"]},"payload":{"before":null,'
                     '"after":{"data":{"id":1}},"op":"INSERT","timestamp":{"eventTime":1620457659000},'
                     '"ddl":null,"scn":"1"},"extend":{}}', "dataworks-v2"),
    "dataworks-v2-heartbeat": ('{"version":"2.0","payload":{"timestamp":{"eventTime":1620457659000},'
                               '"op":"HEARTBEAT"}}', "dataworks-v2"),
    "debezium": ('{"schema":{"type":"struct"},"payload":{"before":null,"after":{"id":1},"source":'
                 '{"db":"d","table":"§","file":"mysql-bin.000003","pos":154,"row":0},"op":"c",'
                 '"ts_ms":1}}', "debezium-json"),
    "debezium-flat": ('{"op":"c","source":{"connector":"OB_MYSQL","pos":"703223@1668491621",'
                      '"ts_ms":1668491621000,"db":"d","table":"§"},"after":{"id":1},"ts_ms":1}',
                      "debezium-flat"),
    "dtle-schema-change": ('{"source":{"server":"mysql2"},"position":{"ts_sec":1641807976,"file":'
                           '"bin.000022","pos":439,"snapshot":true},"databaseName":"a","ddl":'
                           '"CREATE TABLE `a` (`id` int)","tableChanges":[]}', "debezium-json"),
    "debezium-smt": ('{"field1":"after_value1","field2":"after_value2","__deleted":"false"}',
                     "debezium-smt"),
    "oms": ('{"allMetaData":{"record_primary_key":"id","record_primary_value":"1","db":"t.d",'
            '"table_name":"§","timestamp":"1609344671"},"prevStruct":null,"recordType":"INSERT",'
            '"postStruct":{"id":1}}', "oms-json"),
    "shareplex": ('{"data":{"id":1},"meta":{"op":"ins","time":"2020-11-25T00:01:02","table":"d.§",'
                  '"rowid":"d.§-1","scn":"123456789"}}', "shareplex-json"),
    "oms-avro": ('{"version":1,"id":0,"sourceTimestamp":1702371565,"operation":"INIT","objectName":'
                 '"§","tags":{"pk_uk_info":"{\\"PRIMARY\\":[\\"id\\"]}"},"fields":[{"name":"id",'
                 '"dataTypeNumber":8}],"beforeImages":null,"afterImages":[{"value":"1","precision":8}]}',
                 "oms-avro-json"),
    "aws-dms": ('{"data":{"id":1},"metadata":{"timestamp":"2024-10-27T12:39:03.210671Z","record-type":'
                '"data","operation":"insert","schema-name":"d","table-name":"§"}}', "aws-dms-json"),
    "ogg": ('{"table":"D.§","pos":"00000000000000000000143","primary_keys":["ID"],"after":{"ID":1},'
            '"op_type":"I","op_ts":"2020-05-13 15:40:06.000000"}', "ogg-json"),
    "maxwell": ('{"database":"d","table":"§","type":"insert","ts":1596684883,"xid":7125,"xoffset":2,'
                '"data":{"id":1},"primary_key_columns":["id"]}', "maxwell-json"),
    "maxwell-ddl": ('{"type":"table-alter","database":"d","table":"§","def":{},"ts":1,"sql":"alter '
                    'table t add c int","position":"master.000006:1"}', "maxwell-json"),
    "cloudcanal": (_fixture_lines("cloudcanal-json", "cloudcanal_examples")[0].replace(
        '"table":"table_test"', '"table":"§"'), "cloudcanal-json"),
    "canal": (_fixture_lines("canal-json", "cloudcanal_examples")[0], AMBIGUOUS),
    "canal-minimal": ('{"data":[{"k":"1","v":"Hi"}],"type":"INSERT"}', AMBIGUOUS),
    "drs": (_fixture_lines("drs-json", "drs_examples")[1], AMBIGUOUS),
    "drs-c": (_fixture_lines("drs-json-c", "drs_examples")[3], AMBIGUOUS),
    "plain-row": ('{"a":"a3","b":"b3","event_tm":"2024-05-22 19:50:40"}', None),
    "garbage": ("{oops", None),
}


# each message names its own table (§): parsed messages of different formats must not share a key
DETECT = {name: (value.replace("§", "detect_" + name.replace("-", "_")), fmt)
          for name, (value, fmt) in _DETECT.items()}


# --- Paimon's canal samples -------------------------------------------------------------

def _paimon_units(root: Path) -> dict[str, list[str]]:
    """Paimon's scenarios: a folder's files in order (table/event: one scenario per file)."""
    units: dict[str, list[str]] = {}
    for folder in sorted({p.parent for p in root.rglob("*.txt")}):
        files = sorted(folder.glob("*.txt"))
        if folder.name == "event":
            for f in files:
                units[str(f.relative_to(root))] = paimon_messages(f)
        else:
            units[str(folder.relative_to(root))] = [m for f in files for m in paimon_messages(f)]
    return units


def _key_names(msg: dict, row: dict) -> list[str]:
    """pkNames matched to the row's own spelling (case-insensitive); no key: every column."""
    names = []
    for k in msg.get("pkNames") or []:
        names.append(k if k in row else next(c for c in row if c.lower() == k.lower()))
    return names or list(row)


def _paimon_changes(messages: list[str]) -> dict[tuple, list[tuple]]:
    """(database, table, key) -> the row effects the messages have on it, in message order."""
    changes: dict[tuple, list[tuple]] = {}
    for text in messages:
        msg = _loads(text)
        if msg.get("isDdl") or not msg.get("table") or msg.get("type") not in ("INSERT", "UPDATE", "DELETE"):
            continue
        for i, row in enumerate(msg.get("data") or []):
            old = (msg.get("old") or [])[i] if i < len(msg.get("old") or []) else {}
            before = {**row, **(old or {})}
            keys = _key_names(msg, row)
            after_key = tuple((k, row[k]) for k in keys)
            before_key = tuple((k, before[k]) for k in keys)
            ident = (msg.get("database"), msg["table"])
            if msg["type"] == "UPDATE" and before_key != after_key:
                changes.setdefault((*ident, before_key), []).append(("d", None))
            effect = ("d", None) if msg["type"] == "DELETE" else ("u", json.dumps(row, sort_keys=True))
            changes.setdefault((*ident, after_key), []).append(effect)
    return changes


def _paimon_rounds(units: dict[str, list[str]]) -> list[dict[str, list[str]]]:
    """Units grouped so that no two in a group give one (table, key) different histories.

    Paimon's tests reuse table names across scenarios (schema_evolution_1 is inserted,
    updated and deleted differently by several), so scenarios that collide go in later rounds,
    each into an empty lakehouse.
    """
    effects = {name: _paimon_changes(msgs) for name, msgs in units.items()}
    rounds: list[dict[str, list[str]]] = []
    for name in sorted(units, key=lambda n: (-len(units[n]), n)):
        for group in rounds:
            if all(effects[name].get(k, v) == v for other in group for k, v in effects[other].items()):
                group[name] = units[name]
                break
        else:
            rounds.append({name: units[name]})
    return rounds


def _paimon_truth(messages: list[str]) -> dict[tuple, list[dict]]:
    """(database, table) -> the rows it holds after the messages, read in order."""
    state: dict[tuple, dict] = {}
    for text in messages:
        msg = _loads(text)
        if msg.get("isDdl") or not msg.get("table") or msg.get("type") not in ("INSERT", "UPDATE", "DELETE"):
            continue
        table = (msg.get("database"), msg["table"])
        rows = state.setdefault(table, {})
        for i, row in enumerate(msg.get("data") or []):
            old = (msg.get("old") or [])[i] if i < len(msg.get("old") or []) else {}
            keys = _key_names(msg, row)
            before = {**row, **(old or {})}
            rows.pop(tuple((k, before[k]) for k in keys), None)
            if msg["type"] != "DELETE":
                rows[tuple((k, row[k]) for k in keys)] = row
            else:
                rows.pop(tuple((k, row[k]) for k in keys), None)
    return {t: sorted(rows.values(), key=json.dumps) for t, rows in state.items()}


def _gold_tables(lakehouse: InProcessLakehouse, tables: list[tuple]) -> dict[tuple, list[dict]]:
    got: dict[tuple, list[dict]] = {t: [] for t in tables}
    for r in lakehouse.rows("select source_database, source_table, row from gold.cdc_current_state "
                            "where source_format = 'canal-json'"):
        key = (r["source_database"], r["source_table"])
        if key in got:
            got[key].append(_loads(r["row"]))
    return {t: sorted(rows, key=json.dumps) for t, rows in got.items()}


def _paimon_root() -> Path | None:
    root = SHARED / "conformance" / "paimon" / "canal"
    return root if root.exists() else None


# --- the module's lakehouse ---------------------------------------------------------------

@pytest.fixture(scope="module")
def canal_lake(_shared_lakehouse: InProcessLakehouse) -> dict[str, Any]:
    lake = _shared_lakehouse
    lake.reset()
    streams = {fmt: canal_history(fmt, seed=11 + i) for i, fmt in enumerate(HARD_FORMATS)}
    parts = {fmt: hard_delivery(t, seed=5 + i) for i, (fmt, t) in enumerate(streams.items())}

    canal_lines = (parts["canal-json"][0]
                   + _envelopes("canal.vendor.cloudcanal", _fixture_lines("canal-json", "cloudcanal_examples"))
                   + _envelopes("canal.vendor.oms", _fixture_lines("canal-json", "oms_examples"))
                   + _envelopes("canal.quirks", QUIRKS)
                   + [envelope(f"canal.broken.{name}", 0, 0, None, value)
                      for name, (value, _) in BROKEN.items()])
    lake.ingest(canal_lines, fmt="canal-json")
    # DRS: every batch at once (offsets still shuffled against `id`, duplicates included)
    for fmt in ("drs-json", "drs-json-c"):
        lines = [line for part in parts[fmt] for line in part]
        lake.ingest(lines + _envelopes(f"{fmt}.vendor", _fixture_lines(fmt, "drs_examples")), fmt=fmt)
    # no format given: CloudCanal's shape is detected, like every other format's
    detect_lines = [envelope(f"detect.{name}", 0, 0, None, value) for name, (value, _) in DETECT.items()]
    lake.ingest(parts["cloudcanal-json"][0] + detect_lines
                + _envelopes("cloudcanal.vendor", _fixture_lines("cloudcanal-json", "cloudcanal_examples")))
    paimon_round: dict[str, list[str]] = {}
    if _paimon_root():
        paimon_round = _paimon_rounds(_paimon_units(_paimon_root()))[0]
        lake.ingest([m for msgs in paimon_round.values() for m in msgs], fmt="canal-json",
                    topic="paimon.canal.round1")
    lake.build(tests=False)

    # the later batches: older offsets and older changes after newer ones, repeats
    lake.ingest([line for part in parts["canal-json"][1:] for line in part], fmt="canal-json")
    lake.ingest([line for part in parts["cloudcanal-json"][1:] for line in part])
    lake.build()
    return {"lake": lake, "streams": streams, "parts": parts, "paimon_round": paimon_round}


def _what(row: dict[str, Any]) -> str | None:
    """The canonical op of a change, the control kind of a control event, else None."""
    return {"change": row["op"], "control": row["control_kind"]}.get(row["record_kind"])


def _parsed(lake: InProcessLakehouse, where: str) -> list[dict[str, Any]]:
    return lake.rows(f"select * from silver.cdc_parsed where {where} "
                     "order by kafka_topic, kafka_offset, row_index")


@pytest.mark.parametrize("fmt", HARD_FORMATS)
def test_hard_delivery_gives_the_true_final_state(canal_lake, fmt):
    stream: CanalTable = canal_lake["streams"][fmt]
    lake = canal_lake["lake"]
    got = {r["pk"]: _loads(r["row"]) for r in lake.rows(
        f"select pk, row from gold.cdc_current_state where source_format = '{fmt}' "
        f"and source_table = 'orders'")}
    assert got == stream.truth()
    assert len(got) >= 5
    # every Kafka record (repeats land once) ends as changes or control events, none quarantined
    offsets = {json.loads(line)["offset"] for part in canal_lake["parts"][fmt] for line in part}
    kinds = lake.rows(f"select record_kind, count(distinct kafka_offset) as n from silver.cdc_parsed "
                      f"where kafka_topic = '{stream.topic}' group by 1")
    assert {r["record_kind"] for r in kinds} <= {"change", "control"}
    assert sum(r["n"] for r in kinds) == len(offsets)


def test_canal_vendor_examples(canal_lake):
    lake = canal_lake["lake"]
    rows = _parsed(lake, "kafka_topic = 'canal.vendor.cloudcanal'")
    assert [(r["record_kind"], _what(r), r["vendor_op"]) for r in rows] == [
        ("change", "c", "INSERT"), ("change", "u", "UPDATE"), ("control", "ddl", "ALTER"),
        ("change", "c", "INSERT"), ("change", "d", "DELETE")]
    update = rows[1]
    # CloudCanal's example UPDATE changes the key: data col_pk 11, old col_pk 22
    assert (update["pk"], update["before_pk"]) == ('{"col_pk":"11"}', '{"col_pk":"22"}')
    assert _loads(update["before_image"]) == {"col1": "22", "col2": "22", "col_pk": "22"}
    assert _loads(update["after_image"]) == {"col1": "11", "col2": "11", "col_pk": "11"}
    assert update["key_columns"] == ["col_pk"]
    assert json.loads(update["column_types"])["col_pk"] == {
        "type": "varchar(22)", "mysqlType": "varchar(22)", "sqlType": 12}
    assert str(update["event_time"]) == "2022-11-30 06:47:27"
    assert update["vendor_sequence"] == "1669790847000:0"
    ddl = rows[2]
    assert ddl["statement"] == "alter table table_test add col2 varchar(22) null"
    assert json.loads(ddl["column_types"])["col2"] == {
        "type": "varchar(22)", "typeName": "varchar", "jdbcType": 12, "position": 1}
    state = lake.current_state("table_test")
    assert {pk for (_, pk) in state} >= {'{"col_pk":"33"}'}
    assert '{"col_pk":"11"}' not in {pk for (_, pk) in state}

    # OMS: bare numbers kept exact; `old` names a column ("string") absent from data; the
    # DELETE's pkNames (int8, int16) are absent from its row: quarantined, not guessed
    rows = _parsed(lake, "kafka_topic = 'canal.vendor.oms'")
    assert [(r["record_kind"], _what(r)) for r in rows] == [
        ("change", "c"), ("change", "u"), ("quarantine", None), ("control", "ddl")]
    insert, update, delete, ddl = rows
    after = _loads(insert["after_image"])
    assert (after["col4"], after["col12"], after["col13"], after["col3"]) == (
        "9.999999999999999093266253", "9.9999999999999990", "10223372036854775806", "1.2222")
    assert insert["pk"] == '{"col1":"2020-11-25 00:01:02","col2":"hello world"}'
    assert _loads(update["before_image"])["string"] == "hello world"
    assert "string" not in _loads(update["after_image"])
    assert _loads(update["after_image"])["col4"] == "9.999999999999999093266253372484"
    assert delete["quarantine_reason"] == 'no key: "pkNames" names "int8", "int16", absent from the row image'
    assert ddl["statement"].startswith("ALTER TABLE connector_test.all_mysql_type_test ADD COLUMN c90")
    assert (ddl["source_database"], ddl["source_table"]) == ("connector_test", "all_mysql_type_test")
    assert str(ddl["event_time"]) == "2022-12-16 07:53:29"
    state = lake.current_state("table")
    assert sorted(_loads(pk)["col2"] for (_, pk) in state) == ["hello world", "hello world 2020"]


@pytest.mark.parametrize("fmt", ["drs-json", "drs-json-c"])
def test_drs_vendor_examples(canal_lake, fmt):
    lake = canal_lake["lake"]
    rows = _parsed(lake, f"kafka_topic = '{fmt}.vendor'")
    assert [(r["record_kind"], _what(r), r["vendor_sequence"]) for r in rows] == [
        ("change", "c", "27676"), ("change", "u", "27677"), ("change", "c", "27678"),
        ("change", "d", "27679"), ("control", "ddl", "27680")]
    # the document's UPDATE: table "test " keeps its trailing space; id 103 becomes 104
    update = rows[1]
    assert update["source_table"] == "test "
    assert update["source_database"] == ("test01" if fmt == "drs-json" else "test01_c")
    assert (update["pk"], update["before_pk"]) == ('{"id":"104"}', '{"id":"103"}')
    assert _loads(update["before_image"])["c13"] == "asfiajhfiaf939-0239"
    assert str(update["event_time"]) == "2021-06-25 09:51:53"
    assert json.loads(update["column_types"])["c4"] == {"type": "datetime", "mysqlType": "datetime", "sqlType": 94}
    # DRS escapes: \u003c \u003e \u0026 \u003d \u0027 decode to < > & = '
    assert _loads(rows[2]["after_image"])["c6"] == "a<b>c&d=e'f"
    # the DELETE's image: in old for drs-json, in data for drs-json-c; either way the key goes
    assert rows[3]["pk"] == '{"id":"105"}'
    assert _loads(rows[3]["before_image"])["c1"] == "\u4e2d\u6587 \U0001F600"
    assert rows[4]["statement"] == "ALTER TABLE `test ` ADD COLUMN c15 INT"
    got = {r["pk"]: _loads(r["row"]) for r in lake.rows(
        f"select pk, row from gold.cdc_current_state where source_format = '{fmt}' "
        "and source_table = 'test '")}
    assert list(got) == ['{"id":"104"}']
    # timestamps: epoch seconds in JSON, 'yyyy-mm-dd hh:mm:ss' strings in JSON-C, kept as sent
    assert got['{"id":"104"}']["c5"] == ("2021-06-25 17:51:53" if fmt == "drs-json-c" else "1624614713.201")


def test_cloudcanal_vendor_examples(canal_lake):
    lake = canal_lake["lake"]
    rows = _parsed(lake, "kafka_topic = 'cloudcanal.vendor'")
    assert [(r["source_format"], r["record_kind"], _what(r)) for r in rows] == [
        ("cloudcanal-json", "change", "c"), ("cloudcanal-json", "change", "u"),
        ("cloudcanal-json", "control", "ddl"), ("cloudcanal-json", "change", "c"),
        ("cloudcanal-json", "change", "d"), ("cloudcanal-json", "control", "transaction")]
    # pks [] as in the document: a table without key, every column its identity
    update = rows[1]
    assert update["pk"] == '{"col1":"11","col2":"11","col_pk":"11"}'
    assert update["before_pk"] == '{"col1":"22","col2":"22","col_pk":"22"}'
    assert (update["source_database"], update["source_schema"]) == ("db_test", "db_test")
    assert json.loads(update["column_types"])["col1"] == {
        "type": "varchar(22)", "dbValType": "varchar(22)", "jdbcType": 12}
    assert update["vendor_sequence"] == "1669789152000:0"
    assert rows[2]["statement"] == "alter table table_test add col2 varchar(22) null"
    got = [_loads(r["row"]) for r in lake.rows(
        "select row from gold.cdc_current_state where source_format = 'cloudcanal-json' "
        "and source_table = 'table_test'")]
    assert got == [{"col1": "33", "col2": "33", "col_pk": "33"}]


def test_quirks(canal_lake):
    lake = canal_lake["lake"]
    for table, rows in QUIRK_STATE.items():
        got = [_loads(r["row"]) for r in lake.rows(
            "select row from gold.cdc_current_state where source_format = 'canal-json' "
            f"and source_database = 'quirks' and source_table = '{table}' order by pk")]
        assert sorted(got, key=json.dumps) == sorted(rows, key=json.dumps), table
    multi = _parsed(lake, "kafka_topic = 'canal.quirks' and source_table = 'multi'")
    assert [(r["kafka_offset"], r["row_index"], r["op"]) for r in multi] == [
        (0, 0, "c"), (0, 1, "c"), (0, 2, "c"), (1, 0, "u"), (1, 1, "u"), (2, 0, "d")]
    assert _loads(multi[3]["before_image"]) == {"id": "1", "a": "x", "b": "1"}
    assert (multi[4]["pk"], multi[4]["before_pk"]) == ('{"id":"20"}', '{"id":"2"}')
    cased = _parsed(lake, "kafka_topic = 'canal.quirks' and source_table = 'cased'")
    assert [r["pk"] for r in cased] == ['{"K1":"7"}', '{"K1":"7"}']
    repeat = _parsed(lake, "kafka_topic = 'canal.quirks' and source_table = 'repeat'")
    assert [(r["key_columns"], r["pk"]) for r in repeat] == [(["id"], '{"id":"1"}')] * 2
    assert _loads(repeat[1]["before_image"]) == {"id": "1", "v": "a"}
    oddtypes = _parsed(lake, "kafka_topic = 'canal.quirks' and source_table = 'oddtypes'")
    assert [(r["record_kind"], r["column_types"]) for r in oddtypes] == [("change", None)]
    trunc = _parsed(lake, "kafka_topic = 'canal.quirks' and source_table = 'trunc' and op = 't'")
    assert len(trunc) == 1 and trunc[0]["statement"] == "TRUNCATE TABLE trunc"
    tomb = _parsed(lake, "kafka_topic = 'canal.quirks' and vendor_op = '<tombstone>'")
    assert [(r["record_kind"], r["control_kind"]) for r in tomb] == [("control", "tombstone")]


def test_broken_messages_are_quarantined_with_their_reason(canal_lake):
    lake = canal_lake["lake"]
    got = {r["kafka_topic"].removeprefix("canal.broken."): r["reason"] for r in lake.rows(
        "select kafka_topic, reason from silver.cdc_quarantine where kafka_topic like 'canal.broken.%'")}
    assert got == {name: reason for name, (_, reason) in BROKEN.items()}
    # one outcome per record, even when several rows were in it
    counts = lake.rows("select kafka_topic, count(*) as n from silver.cdc_parsed "
                       "where kafka_topic like 'canal.broken.%' group by 1 having n > 1")
    assert counts == []


def test_format_detection(canal_lake):
    lake = canal_lake["lake"]
    got = {r["kafka_topic"].removeprefix("detect."): r for r in lake.rows(
        "select kafka_topic, source_format, record_kind, quarantine_reason from silver.cdc_parsed "
        "where kafka_topic like 'detect.%' and row_index = 0")}
    assert {name: r["source_format"] for name, r in got.items()} == {
        name: expected for name, (_, expected) in DETECT.items()}
    for name in ("canal", "canal-minimal", "drs", "drs-c"):
        assert got[name]["quarantine_reason"].startswith(
            "ambiguous format: the message could be any of canal-json,drs-json,drs-json-c"), name
    for name in ("plain-row", "garbage"):
        assert got[name]["quarantine_reason"].startswith("unknown format"), name
    # detected CloudCanal messages parse like configured ones
    assert got["cloudcanal"]["record_kind"] == "change"


def test_every_record_has_exactly_one_kind_of_outcome(canal_lake):
    lake = canal_lake["lake"]
    bronze = lake.rows("select count(*) as n from bronze.kafka_records")[0]["n"]
    parsed = lake.rows("select count(distinct kafka_topic, kafka_partition, kafka_offset) as n "
                       "from silver.cdc_parsed")[0]["n"]
    mixed = lake.rows("select kafka_topic, kafka_offset from silver.cdc_parsed "
                      "group by kafka_topic, kafka_partition, kafka_offset "
                      "having count(distinct record_kind) > 1")
    assert parsed == bronze and mixed == []


def test_paimon_canal_samples_first_round(canal_lake):
    needs_shared("conformance", "paimon", "canal")
    lake = canal_lake["lake"]
    messages = [m for msgs in canal_lake["paimon_round"].values() for m in msgs]
    _check_paimon(lake, messages, "paimon.canal.round1")


def _check_paimon(lake: InProcessLakehouse, messages: list[str], topic: str) -> None:
    truth = _paimon_truth(messages)
    assert truth, "no table changes in the samples"
    got = _gold_tables(lake, list(truth))
    for table in truth:
        assert got[table] == truth[table], table
    # messages naming no table (Paimon's "incomplete" samples) are quarantined, not lost
    incomplete = sum(1 for m in messages if not _loads(m).get("table"))
    reasons = Counter(r["reason"] for r in lake.rows(
        f"select reason from silver.cdc_quarantine where kafka_topic = '{topic}'"))
    assert reasons == (Counter({"no table: the message names no source table": incomplete})
                       if incomplete else Counter())
    ddl = lake.rows(f"select count(*) as n from silver.cdc_control_events where kafka_topic = '{topic}' "
                    "and control_kind = 'ddl'")[0]["n"]
    assert ddl == sum(1 for m in messages if _loads(m).get("isDdl"))


def test_paimon_canal_samples_colliding_rounds(lakehouse):
    """The scenarios that reuse a table and key of the first round with another history."""
    root = needs_shared("conformance", "paimon", "canal")
    rounds = _paimon_rounds(_paimon_units(root))[1:]
    assert rounds, "every sample fitted in the first round"
    for i, units in enumerate(rounds, start=2):
        lakehouse.reset()
        messages = [m for msgs in units.values() for m in msgs]
        lakehouse.ingest(messages, fmt="canal-json", topic=f"paimon.canal.round{i}")
        lakehouse.build(tests=i == len(rounds) + 1)
        _check_paimon(lakehouse, messages, f"paimon.canal.round{i}")


def test_builders_follow_the_vendor_rules():
    """The message builders themselves (no Spark): canal's old is partial, DRS deletes in old."""
    t = CanalTable("canal-json", "d", "t", ["id"], TYPES)
    t.insert({"id": "1", "note": "a"})
    t.update(({"id": "1", "note": "a"}, {"id": "1", "note": "b"}))
    assert _loads(t.messages[-1][1])["old"] == [{"note": "a"}]
    d = CanalTable("drs-json", "d", "t", ["id"], TYPES)
    d.insert({"id": "1", "note": "<"})
    d.delete({"id": "1", "note": "<"})
    msg = _loads(d.messages[-1][1])
    assert msg["data"] is None and msg["old"] == [{"id": "1", "note": "<"}]
    assert "\\u003c" in d.messages[0][1]
    assert d.truth() == {} and pk_json({"id": Raw("1")}, ["id"]) == '{"id":1}'
    assert as_text({"a": Raw("1.50")}) == {"a": "1.50"}
