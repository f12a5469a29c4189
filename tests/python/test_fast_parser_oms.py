"""The oms-json fast parser (jvm/functions, OmsFast) gives the rows of the SQL parser it stands in for.

cdc_lakehouse.json.parse_oms reads the common OceanBase OMS "Default" message (INSERT, UPDATE,
DELETE and ROW with flat images, HEARTBEAT without) in one pass in the JVM; any other message
it leaves to macros/formats/oms_json.sql. silver.cdc_parsed is built twice over the same bronze
records, with the fast parsers off and on, and every row must be the same: the project's
fixtures of the format (the vendor document's examples), messages of the benchmark's generator,
a history written by the tests' OMS builder (full load, heartbeats, a DDL, type metadata) and
hand-written messages at the edges of "common" (exact numbers, escapes, Unicode, keys missing
from the images, every source of the sequence, nested values, DDL, __light_type, malformed
text, fields of odd types). ../shared holds no oms-json samples today; any that appear under
conformance/ with "oms" in their path are landed too.
"""

from __future__ import annotations

import random
from typing import Any

from cdc_messages import Raw, dumps
from conftest import SHARED
from fast_parser_check import (
    FIXTURES,
    Edge,
    assert_same_rows,
    bench_lines,
    expected_taken,
    jvm_share,
    land_edges,
    land_values,
    lines_of,
    taken_by_jvm,
)
from oms_messages import EXACT, STRINGS, OmsJsonTable, hard_delivery, play_history

META: dict[str, Any] = {
    "checkpoint": "1699999990", "record_primary_key": "id\u0001region", "source_identity": None,
    "uniqueId": "{tid:500003, partition_id:1, part_cnt:0},1,0,0", "transId": "1002_7000001", "clusterId": "1",
    "record_primary_value": "7\u0001eu", "dbType": "OB_MYSQL", "storeDataSequence": Raw("170000000000001"),
    "table_name": "items", "db": "tenant1.shop", "timestamp": "1700000000",
}
ROW7: dict[str, Any] = {
    "id": 7, "region": "eu", "amount": Raw("1.25E-10"), "tiny": Raw("0E-24"), "neg": Raw("-0.5e+3"),
    "big": Raw("123456789012345678901234567890123456789012345678901234567890.12345"),
    "huge": Raw("1234567890123456789012345678901234567890"), "plain": Raw("863941913603.0534615149"),
    "s": "quote \" backslash \\ slash / \u4e2d \U0001F600 tab\t nl\n ctl \u0001 \u001f del \u007f",
    "flag": Raw("true"), "off": Raw("false"), "nothing": None, "empty": "",
    "more": "caf\u00e9 <&'> \u0085 \u2028 \u2029 \ufeff \U0010ffff", "escaped": Raw('"\\ud83d\\ude00 \\u00e9 \\/"'),
    "na\u00efve \U0001F600 \" key": 1,
}


def oms(record_type: Any, prev: Any = None, post: Any = None, **meta: Any) -> str:
    """An oms-json message: META with ``meta``'s changes (a value of ... drops the field)."""
    m = {k: v for k, v in {**META, **meta}.items() if v is not ...}
    return dumps({"allMetaData": m, "prevStruct": prev, "recordType": record_type, "postStruct": post})


#: Hand-written oms-json messages: (key, value). The common ones the JVM reads; the rest (marked
#: "sql") it must leave to the SQL parser.
OMS_EDGES: list[Edge] = [
    ("common insert, exact values, escapes", None, oms("INSERT", None, ROW7)),
    ("common update, the key changes", None,
     oms("UPDATE", ROW7, {**ROW7, "id": 8, "s": "moved"}, record_primary_value="8\u0001eu",
         storeDataSequence=Raw("170000000100002"), timestamp="1700000001")),
    ("common delete", None, oms("DELETE", {**ROW7, "id": 8}, None, record_primary_value="8\u0001eu",
                                storeDataSequence=Raw("170000000200003"))),
    ("common heartbeat, as the bench writes it", None,
     dumps({"allMetaData": {"checkpoint": "1700000009", "dbType": "OB_MYSQL", "storeDataSequence": None,
                            "db": None, "timestamp": "1700000009", "table_name": None},
            "prevStruct": None, "recordType": "HEARTBEAT", "postStruct": None})),
    ("common heartbeat, no images at all", None,
     dumps({"allMetaData": {"checkpoint": "1700000010", "timestamp": 1700000010}, "recordType": "HEARTBEAT"})),
    ("common full-load row", None,
     oms("ROW", None, {"id": 9, "region": "eu", "v": 1}, record_primary_value="9\u0001eu",
         storeDataSequence=None, timestamp=None, checkpoint="id=9\u0001region=eu", transId=None)),
    ("common full-load row with a sequence", None,
     oms("ROW", None, {"id": 10, "region": "eu"}, record_primary_value="10\u0001eu")),
    ("common, key columns the images lack", None,
     oms("UPDATE", {"v": 1, "region": "eu"}, {"v": 2}, record_primary_value="11\u0001eu")),
    ("common delete, key columns the image lacks", None,
     oms("DELETE", {"v": 1}, None, record_primary_value="12\u0001eu")),
    ("common, an empty image", None, oms("INSERT", None, {}, record_primary_value="13\u0001eu")),
    ("common, no key", None,
     oms("INSERT", None, {"a": 1, "b": "x"}, record_primary_key=None, record_primary_value=None)),
    ("common, key names without values", None,
     oms("INSERT", None, {"id": 14, "v": 1}, record_primary_key="id", record_primary_value=None)),
    ("common, an empty key", None,
     oms("INSERT", None, {"id": 15}, record_primary_key="", record_primary_value="")),
    ("common, empty key values", None,
     oms("INSERT", None, {"v": 15}, record_primary_key="id\u0001region", record_primary_value="\u0001")),
    ("common, a number as key value", None,
     oms("INSERT", None, {"id": 16}, record_primary_key="id", record_primary_value=Raw("16"))),
    ("common, a MySQL source", None, oms("INSERT", None, {"id": 17, "region": "eu"}, dbType="MYSQL",
                                         db="plain.db", record_primary_value="17\u0001eu")),
    ("common, no dbType", None, oms("INSERT", None, {"id": 18, "region": "eu"}, dbType=None,
                                    db="t.d.x", record_primary_value="18\u0001eu")),
    ("common, OCEANBASE lower case", None, oms("INSERT", None, {"id": 19, "region": "eu"}, dbType="oceanbase",
                                               record_primary_value="19\u0001eu")),
    ("common, OB_ORACLE", None, oms("INSERT", None, {"id": 20, "region": "eu"}, dbType="ob_oracle",
                                    db="T.SCHEMA", record_primary_value="20\u0001eu")),
    ("common, a db without a dot", None, oms("INSERT", None, {"id": 21, "region": "eu"}, db="shop",
                                             record_primary_value="21\u0001eu")),
    ("common, no db and no table", None, oms("INSERT", None, {"id": 22, "region": "eu"}, db=...,
                                             table_name=None, record_primary_value="22\u0001eu")),
    ("common, an unpadded sequence", None, oms("INSERT", None, {"id": 23, "region": "eu"},
                                               storeDataSequence=Raw("17000000001"),
                                               record_primary_value="23\u0001eu")),
    ("common, a short sequence as a string", None, oms("INSERT", None, {"id": 24, "region": "eu"},
                                                       storeDataSequence="0000123",
                                                       record_primary_value="24\u0001eu")),
    ("common, a sequence longer than 38 digits", None,
     oms("INSERT", None, {"id": 25, "region": "eu"}, storeDataSequence=Raw("1" * 60),
         record_primary_value="25\u0001eu")),
    ("common, a sequence that is not digits", None,
     oms("INSERT", None, {"id": 26, "region": "eu"}, storeDataSequence="17e5", record_primary_value="26\u0001eu")),
    ("common, a fraction as sequence", None,
     oms("INSERT", None, {"id": 27, "region": "eu"}, storeDataSequence=Raw("1.5"),
         record_primary_value="27\u0001eu")),
    ("common, the checkpoint orders", None,
     oms("INSERT", None, {"id": 28, "region": "eu"}, storeDataSequence=None, timestamp=None,
         checkpoint=Raw("1699999991"), record_primary_value="28\u0001eu")),
    ("common, a negative timestamp", None,
     oms("INSERT", None, {"id": 29, "region": "eu"}, storeDataSequence=None, timestamp="-5",
         record_primary_value="29\u0001eu")),
    ("common, milliseconds", None,
     oms("INSERT", None, {"id": 30, "region": "eu"}, storeDataSequence=None, timestamp=Raw("1700000000123"),
         checkpoint="not a position", record_primary_value="30\u0001eu")),
    ("common, nothing orders", None,
     oms("INSERT", None, {"id": 31, "region": "eu"}, storeDataSequence=None, timestamp=None, checkpoint=None,
         record_primary_value="31\u0001eu")),
    ("common, numbers and booleans in the metadata", None,
     oms("INSERT", None, {"id": 32, "region": "eu"}, transId=Raw("1002"), table_name=Raw("true"),
         record_primary_value="32\u0001eu")),
    ("common, unread metadata of any shape and extra fields", None,
     dumps({"extra": [1, {"a": None}], "allMetaData": {**META, "uniqueId": {"tid": [1, 2]}, "clusterId": Raw("1"),
                                                        "ddlType": None, "other": {"x": 1},
                                                        "record_primary_value": "33\u0001eu"},
            "recordType": "INSERT", "postStruct": {"id": 33, "region": "eu"}})),
    ("common, whitespace", None,
     ' {\n "allMetaData" : { "record_primary_key" : "id" , "record_primary_value" : "34" , "db" : "a.b" ,'
     ' "table_name" : "items" , "timestamp" : "1700000000" } ,\n "recordType" : "INSERT" ,'
     ' "postStruct" : { "id" : 34 , "v" : 1.0 } } \n'),
    ("common, a Kafka key (not read)", '{"id": 35}',
     oms("INSERT", None, {"id": 35, "region": "eu"}, record_primary_value="35\u0001eu")),
    ("common, an insert with a before image", None,
     oms("INSERT", {"id": 36, "region": "eu", "v": 0}, {"id": 36, "region": "eu", "v": 1},
         record_primary_value="36\u0001eu")),
    ("sql: a nested value", None, oms("INSERT", None, {"id": 40, "region": "eu", "doc": {"a": [1, 2]}},
                                      record_primary_value="40\u0001eu")),
    ("sql: an array value", None, oms("INSERT", None, {"id": 41, "region": "eu", "arr": [1]},
                                      record_primary_value="41\u0001eu")),
    ("sql: DDL", None,
     oms("DDL", None, {"ddl": "ALTER TABLE items ADD c INT"}, record_primary_key=None, record_primary_value=None,
         storeDataSequence=None, ddlType="ALTER_TABLE")),
    ("sql: __light_type", None,
     oms("INSERT", None, {"id": 42, "region": "eu", "__light_type": {"id": {"schemaType": "INT"}}},
         record_primary_value="42\u0001eu")),
    ("sql: __light_type in the before image", None,
     oms("DELETE", {"id": 43, "region": "eu", "__light_type": {"id": {"schemaType": "INT"}}}, None,
         record_primary_value="43\u0001eu")),
    ("sql: invalid JSON", None, '{"allMetaData": {"db": "t.d"}, "postStruct": {"a": 1}, "recordType": "INS'),
    ("sql: not JSON at all", None, "not json at all"),
    ("sql: trailing text", None, oms("INSERT", None, {"id": 44, "region": "eu"}) + " x"),
    ("sql: single quotes", None, "{'allMetaData': {}, 'recordType': 'INSERT', 'postStruct': {'id': 45}}"),
    ("sql: a top-level array", None, "[" + oms("INSERT", None, {"id": 46, "region": "eu"}) + "]"),
    ("sql: a column twice", None,
     '{"allMetaData": {"record_primary_key": "id"}, "recordType": "INSERT", "postStruct": {"id": 47, "id": 48}}'),
    ("sql: recordType twice", None,
     '{"allMetaData": {}, "recordType": "INSERT", "recordType": "DELETE", "postStruct": {"id": 47}}'),
    ("sql: a string holding U+0000", None,
     oms("INSERT", None, {"id": 49, "region": "eu", "s": "\u0000x"}, record_primary_value="49\u0001eu")),
    ("sql: recordType a number", None, oms(Raw("1"), None, {"id": 50, "region": "eu"})),
    ("sql: recordType lower case", None, oms("insert", None, {"id": 51, "region": "eu"})),
    ("sql: an unknown recordType", None, oms("MERGE", None, {"id": 52, "region": "eu"})),
    ("sql: no recordType", None,
     dumps({"allMetaData": META, "postStruct": {"id": 7, "region": "eu"}})),
    ("sql: INSERT without postStruct", None, oms("INSERT", None, None)),
    ("sql: UPDATE without postStruct", None, oms("UPDATE", {"id": 7, "region": "eu"}, None)),
    ("sql: DELETE without prevStruct", None, oms("DELETE", None, {"id": 7, "region": "eu"})),
    ("sql: HEARTBEAT with an image", None, oms("HEARTBEAT", None, {"id": 7, "region": "eu"})),
    ("sql: postStruct a string", None, oms("INSERT", None, '{"id": 53, "region": "eu"}')),
    ("sql: postStruct a number", None, oms("INSERT", None, Raw("53"))),
    ("sql: no allMetaData", None, dumps({"recordType": "INSERT", "postStruct": {"id": 54}})),
    ("sql: allMetaData a string", None,
     dumps({"allMetaData": '{"db": "a.b"}', "recordType": "INSERT", "postStruct": {"id": 55}})),
    ("sql: a metadata field an object", None,
     oms("INSERT", None, {"id": 56, "region": "eu"}, table_name={"name": "items"},
         record_primary_value="56\u0001eu")),
    ("sql: a key column named twice", None,
     oms("INSERT", None, {"id": 57}, record_primary_key="id\u0001id", record_primary_value="57\u000157")),
    ("sql: fewer key values than names", None, oms("INSERT", None, {"id": 58}, record_primary_value="58")),
    ("sql: a trailing separator in the key names", None,
     oms("INSERT", None, {"id": 59}, record_primary_key="id\u0001", record_primary_value="59\u0001")),
    ("sql: a fraction of a second", None,
     oms("INSERT", None, {"id": 60, "region": "eu"}, timestamp="1700000000.5", record_primary_value="60\u0001eu")),
    ("sql: a timestamp that is not a number", None,
     oms("INSERT", None, {"id": 61, "region": "eu"}, timestamp="yesterday", record_primary_value="61\u0001eu")),
    ("sql: a sequence ending in a newline", None,
     oms("INSERT", None, {"id": 62, "region": "eu"}, storeDataSequence="170000000000001\n",
         record_primary_value="62\u0001eu")),
    ("sql: a top-level _corrupt", None,
     dumps({"allMetaData": META, "recordType": "INSERT", "postStruct": {"id": 7, "region": "eu"},
            "_corrupt": None})),
    ("sql: a lone surrogate", None,
     oms("INSERT", None, {"id": 64, "region": "eu", "s": Raw('"\\ud800x"')}, record_primary_value="64\u0001eu")),
    ("sql: a dbType beyond ASCII", None,
     oms("INSERT", None, {"id": 63, "region": "eu"}, dbType="oceanba\u017fe", record_primary_value="63\u0001eu")),
    ("sql: leading zeros in a number", None,
     '{"allMetaData": {"table_name": "items"}, "recordType": "INSERT", "postStruct": {"id": 007}}'),
    ("sql: a tombstone", None, None),
]


def _history() -> list[str]:
    """A table's history as the tests' OMS builder writes it: full load, changes, heartbeats, DDL,
    unpadded increments, then the same with DefaultExtendColumnType's type metadata."""
    lines: list[str] = []

    def row(rng: random.Random, ident: int, version: int) -> dict[str, Any]:
        return {"id": ident, "region": rng.choice(["eu", "us"]), "amount": rng.choice(EXACT),
                "note": rng.choice(STRINGS), "flag": rng.choice([None, Raw("true"), 1]), "version": version}

    plain = OmsJsonTable("tenant1", "shop", "orders", ["id", "region"], padded=False)
    play_history(plain, 21, row, initial=3)
    plain.heartbeat()
    plain.ddl("ALTER TABLE orders ADD COLUMN c90 VARCHAR(30)")
    for batch in hard_delivery("oms.shop.orders", plain.messages, 21, batches=2):
        lines += batch
    typed = OmsJsonTable("tenant1", "shop", "typed", ["id"], light_types={"id": "INT", "amount": "DECIMAL"},
                         rng=random.Random(2))
    play_history(typed, 22, row, changes=10, initial=1)
    for batch in hard_delivery("oms.shop.typed", typed.messages, 22, batches=2):
        lines += batch
    return lines


def test_oms_fast_parser_gives_the_sql_parsers_rows(lakehouse):
    topic = "fast.oms.items"
    land_edges(lakehouse, "oms-json", topic, OMS_EDGES)
    bench = bench_lines("oms-json")
    lakehouse.ingest(bench, fmt="oms-json")
    doc_topic = "oms_json_doc"
    doc = lines_of(FIXTURES / "oms-json" / "doc_examples.jsonl")
    doc_edges: list[Edge] = [(f"doc {i}", None, line) for i, line in enumerate(doc)]
    land_edges(lakehouse, "oms-json", doc_topic, doc_edges)
    history = _history()
    lakehouse.ingest(history, fmt="oms-json")
    conformance = SHARED / "conformance"
    shared = sorted(p for p in conformance.rglob("*")
                    if p.is_file() and "oms" in str(p.relative_to(conformance)).lower()
                    and p.suffix in (".txt", ".jsonl")) if conformance.is_dir() else []
    land_values(lakehouse, "oms-json", {f"shared.oms{i}.t": lines_of(path) for i, path in enumerate(shared)})

    assert taken_by_jvm(lakehouse, "parse_oms", topic, OMS_EDGES) == expected_taken(OMS_EDGES)
    assert jvm_share(lakehouse, "parse_oms", "bench.oms-json.%") == 1.0, "the bench's messages are all common"
    # the document's examples: the ones without DDL or __light_type are common
    doc_taken = taken_by_jvm(lakehouse, "parse_oms", doc_topic, doc_edges)
    assert [name for name, _, line in doc_edges if doc_taken[name]] == [
        name for name, _, line in doc_edges if '"DDL"' not in line and "__light_type" not in line]
    assert_same_rows(lakehouse, minimum=len(OMS_EDGES) + len(bench) + len(doc) + len(set(history)))
