"""The maxwell-json fast parser (jvm/functions, MaxwellFast) gives the rows of the SQL parser.

cdc_lakehouse.json.parse_maxwell reads the common Maxwell row (insert / update / delete with
flat images) in one pass in the JVM; any other message it leaves to
macros/formats/maxwell_json.sql, which stays the definition of the format. silver.cdc_parsed
is built twice over the same bronze records, with the fast parsers off and on, and every row
must be the same: hand-written messages at the edges of "common" (exact numbers, escapes,
Unicode, nulls, updates with and without ``old``, keys from primary_key_columns, primary_key
or the record key, binlog positions and xoffsets, bootstrap and DDL types, nested values,
malformed text), the project's fixtures, the benchmark generator's messages and, when
../shared is beside the checkout, Apache Paimon's real Maxwell messages.
"""

from __future__ import annotations

from cdc_messages import envelope
from conftest import SHARED
from dataworks_messages import fixture_messages, paimon_messages
from fast_parser_check import (
    Edge,
    assert_same_rows,
    bench_lines,
    expected_taken,
    jvm_share,
    land_edges,
    land_values,
    taken_by_jvm,
)

KEY = '{"database": "shop", "table": "items", "pk.id": %s}'

#: Hand-written maxwell-json messages: (name, key, value). The common ones the JVM reads; the
#: rest (marked "sql:") it must leave to the SQL parser.
MAXWELL_EDGES: list[Edge] = [
    ("common insert, exact numbers, escapes, Unicode", KEY % 1,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000000, "xid": 555, "commit": true,'
     ' "position": "mysql-bin.000012:4567", "server_id": 1, "thread_id": 20, "primary_key_columns": ["id"],'
     ' "data": {"id": 1, "price": 9.999999999999999093266253, "big": 123456789012345678901234567890,'
     ' "neg": -9223372036854775809, "name": "caf\\u00e9 \\"q\\" \\\\ \\/ \\n \\t \\u0001 \\ud83d\\ude00 中 \\u2028",'
     ' "ok": true, "no": false, "nothing": null, "f": 1.5e-7, "e": -2E+3, "zero": 0.0, "empty": ""}}'),
    ("common update with old: a key change, an old null, an old column not in data",
     '{"database": "shop", "table": "items", "pk.id": 2, "pk.c": "x"}',
     '{"database": "shop", "table": "items", "type": "update", "ts": 1700000001, "xid": 556, "xoffset": 3,'
     ' "position": "mysql-bin.000012:5000", "primary_key": [2, "x"], "primary_key_columns": ["id", "c"],'
     ' "data": {"id": 2, "c": "x", "v": "new", "n": 7, "w": null, "\\ud83d\\ude00": "\\ud83d\\ude01 😂"},'
     ' "old": {"id": 1, "v": null, "w": 1.000000000000000000001, "gone": "not in data", "\\ud83d\\ude00": "😀"}}'),
    ("common update without old", KEY % 3,
     '{"database": "shop", "table": "items", "type": "update", "ts": 1700000002, "xid": 557, "commit": true,'
     ' "data": {"id": 3, "v": "same"}}'),
    ("common update, empty old, key only in the record key", KEY % 4,
     '{"database": "shop", "table": "items", "type": "update", "ts": 1700000003, "xid": 558,'
     ' "position": "master.000006:801345", "data": {"id": 4, "v": "b"}, "old": {}}'),
    ("common delete", KEY % 5,
     '{"database": "shop", "table": "items", "type": "delete", "ts": 1700000004, "xid": 559, "commit": true,'
     ' "position": "mysql-bin.000013:4", "primary_key_columns": ["id"], "data": {"id": 5, "v": "gone"}}'),
    ("common delete without any key (a multiset)", None,
     '{"database": "shop", "table": "bag", "type": "delete", "ts": 1700000005, "data": {"a": 1, "b": "x"}}'),
    ("common insert without any key", None,
     '{"database": "shop", "table": "bag", "type": "insert", "ts": 1700000006, "data": {"a": 1, "b": "x"}}'),
    ("common insert, a key without pk members", '{"database": "shop", "table": "bag"}',
     '{"database": "shop", "table": "bag", "type": "insert", "ts": 1700000007, "data": {"a": 2}}'),
    ("common insert, primary_key of another length than its columns", KEY % 6,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000008, "primary_key": [6, 7],'
     ' "primary_key_columns": ["id"], "data": {"id": 6}}'),
    ("common insert, primary_key with a null and a boolean", None,
     '{"database": "shop", "table": "kv", "type": "insert", "ts": 1700000009, "primary_key": [null, true],'
     ' "primary_key_columns": ["k", "b"], "data": {"k": null, "b": true}}'),
    ("common insert, empty primary_key_columns", KEY % 8,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000010, "primary_key_columns": [],'
     ' "data": {"id": 8}}'),
    ("common insert, ts in milliseconds, no commit, odd positions", KEY % 9,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000011123, "xid": "x-1",'
     ' "position": "no-file-number:77", "data": {"id": 9}}'),
    ("common insert, position without digits at the end", KEY % 10,
     '{"database": "shop", "table": "items", "type": "insert", "ts": -5, "commit": false,'
     ' "position": "mysql-bin.000001:", "data": {"id": 10}}'),
    ("common insert, position a:b:c", KEY % 11,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 0, "xoffset": "0007",'
     ' "position": "12:34:56", "data": {"id": 11}}'),
    ("common insert, a number as position, a huge xoffset", KEY % 12,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1,'
     ' "xoffset": 123456789012345678901234567890123456789, "position": 99, "data": {"id": 12}}'),
    ("common insert, empty data, a sql member, numbers for names", None,
     '{"database": 7, "table": 8, "type": "insert", "ts": 1700000012, "sql": "insert into t values ()",'
     ' "data": {}}'),
    ("common insert, a Unicode pk member and an empty pk name", '{"pk.名": "値", "pk.": 1}',
     '{"database": "shop", "table": "uni", "type": "insert", "ts": 1700000013, "data": {"名": "値", "": 1}}'),
    ("common, whitespace", ' { "database" : "shop" , "table" : "items" , "pk.id" : 13 } ',
     ' {\n "database" : "shop" ,\n "table" : "items" , "type" : "insert" , "ts" : 1700000014 ,'
     ' "data" : { "id" : 13 } } \n'),
    ("common insert, old on an insert", KEY % 14,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000015, "data": {"id": 14},'
     ' "old": {"id": {"nested": 1}}}'),
    ("sql: an update without any key (two rows)", None,
     '{"database": "shop", "table": "bag", "type": "update", "ts": 1700000016, "data": {"a": 2}, "old": {"a": 1}}'),
    ("sql: an update, a key without pk members", '{"database": "shop", "table": "bag"}',
     '{"database": "shop", "table": "bag", "type": "update", "ts": 1700000017, "data": {"a": 3}, "old": {"a": 2}}'),
    ("sql: a nested value in data", KEY % 20,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000018,'
     ' "data": {"id": 20, "doc": {"a": [1]}}}'),
    ("sql: an array in data", KEY % 21,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000019, "data": {"id": 21, "l": [1, 2]}}'),
    ("sql: a nested old value", KEY % 22,
     '{"database": "shop", "table": "items", "type": "update", "ts": 1700000020, "data": {"id": 22, "j": 1},'
     ' "old": {"j": {"a": 1}}}'),
    ("sql: old an array", KEY % 23,
     '{"database": "shop", "table": "items", "type": "update", "ts": 1700000021, "data": {"id": 23}, "old": [1]}'),
    ("sql: old a string", KEY % 24,
     '{"database": "shop", "table": "items", "type": "update", "ts": 1700000022, "data": {"id": 24}, "old": "x"}'),
    ("sql: bootstrap-insert", KEY % 25,
     '{"database": "shop", "table": "items", "type": "bootstrap-insert", "ts": 1700000023, "data": {"id": 25}}'),
    ("sql: bootstrap-start", None,
     '{"database": "shop", "table": "items", "type": "bootstrap-start", "ts": 1700000024, "data": {}}'),
    ("sql: table-create DDL", None,
     '{"type": "table-create", "database": "shop", "table": "items", "def": {"database": "shop", "table": "items",'
     ' "columns": [{"type": "int", "name": "id"}]}, "ts": 1700000025, "sql": "create table items (id int)",'
     ' "position": "mysql-bin.000013:100"}'),
    ("sql: database-drop DDL", None,
     '{"type": "database-drop", "database": "old_db", "sql": "DROP DATABASE old_db", "ts": 1700000026}'),
    ("sql: a tombstone", KEY % 5, None),
    ("sql: no data", KEY % 26, '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000027}'),
    ("sql: data null", KEY % 27,
     '{"database": "shop", "table": "items", "type": "delete", "ts": 1700000028, "data": null}'),
    ("sql: data a string", KEY % 28,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000029, "data": "{\\"id\\": 28}"}'),
    ("sql: data an array", KEY % 29,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000030, "data": [29]}'),
    ("sql: no type", KEY % 30, '{"database": "shop", "table": "items", "ts": 1700000031, "data": {"id": 30}}'),
    ("sql: a number as type", KEY % 31,
     '{"database": "shop", "table": "items", "type": 1, "ts": 1700000032, "data": {"id": 31}}'),
    ("sql: an unknown type", KEY % 32,
     '{"database": "shop", "table": "items", "type": "INSERT", "ts": 1700000033, "data": {"id": 32}}'),
    ("sql: invalid JSON", KEY % 33, '{"database": "shop", "table": "items", "type": "insert", "data": {"id": 33}'),
    ("sql: single quotes", KEY % 34, "{'database': 'shop', 'table': 'items', 'type': 'insert', 'data': {'id': 34}}"),
    ("sql: trailing text", KEY % 35,
     '{"database": "shop", "table": "items", "type": "insert", "data": {"id": 35}} x'),
    ("sql: a column twice", KEY % 36,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000034, "data": {"id": 36, "id": 37}}'),
    ("sql: a member twice", KEY % 37,
     '{"database": "shop", "table": "items", "type": "insert", "type": "delete", "ts": 1700000035,'
     ' "data": {"id": 37}}'),
    ("sql: a string holding U+0000", KEY % 38,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000036, "data": {"id": 38, "s": "\\u0000x"}}'),
    ("sql: a lone surrogate", KEY % 55,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000051, "data": {"id": 55, "s": "\\ud83d"}}'),
    ("sql: a fraction of a second", KEY % 39,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000037.5, "data": {"id": 39}}'),
    ("sql: ts a string", KEY % 40,
     '{"database": "shop", "table": "items", "type": "insert", "ts": "soon", "data": {"id": 40}}'),
    ("sql: primary_key_columns a string", KEY % 41,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000038, "primary_key_columns": "id",'
     ' "data": {"id": 41}}'),
    ("sql: a number in primary_key_columns", KEY % 42,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000039, "primary_key_columns": [1],'
     ' "data": {"id": 42}}'),
    ("sql: a null in primary_key_columns", KEY % 43,
     '{"database": "shop", "table": "items", "type": "update", "ts": 1700000040, "primary_key_columns": ["id", null],'
     ' "primary_key": [43, 1], "data": {"id": 43}}'),
    ("sql: a name twice in primary_key_columns", KEY % 44,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000041, "primary_key_columns": ["id", "id"],'
     ' "primary_key": [44, 44], "data": {"id": 44}}'),
    ("sql: primary_key a string", KEY % 45,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000042, "primary_key_columns": ["id"],'
     ' "primary_key": "[45]", "data": {"id": 45}}'),
    ("sql: a nested value in primary_key", KEY % 46,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000043, "primary_key_columns": ["id"],'
     ' "primary_key": [[46]], "data": {"id": 46}}'),
    ("sql: a nested position", KEY % 47,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000044, "position": {"file": 1},'
     ' "data": {"id": 47}}'),
    ("sql: a position ending in a line break", KEY % 48,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000045,'
     ' "position": "mysql-bin.000001:5\\n", "data": {"id": 48}}'),
    ("sql: an xoffset ending in a line break", KEY % 49,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000046, "xoffset": "5\\n",'
     ' "position": "mysql-bin.000001:5", "data": {"id": 49}}'),
    ("sql: a _corrupt member", KEY % 50,
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000047, "_corrupt": "x",'
     ' "data": {"id": 50}}'),
    ("sql: a key that is not an object", "50",
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000048, "data": {"id": 51}}'),
    ("sql: Maxwell's array key", '["shop", "items", [{"id": 52}]]',
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000049, "data": {"id": 52}}'),
    ("sql: a nested value in the key", '{"database": "shop", "table": "items", "pk.id": {"v": 53}}',
     '{"database": "shop", "table": "items", "type": "insert", "ts": 1700000050, "data": {"id": 53}}'),
    ("sql: a message that is an array", KEY % 54, '[{"type": "insert", "data": {"id": 54}}]'),
]


def test_maxwell_fast_parser_gives_the_sql_parsers_rows(lakehouse):
    topic = "fast.shop.items"
    land_edges(lakehouse, "maxwell-json", topic, MAXWELL_EDGES)
    bench = bench_lines("maxwell-json")
    lakehouse.ingest(bench, fmt="maxwell-json")
    fixtures, _ = fixture_messages("maxwell-json")
    lakehouse.ingest([envelope("fixtures.maxwell", 0, i, key, value)
                      for i, (_, (key, value)) in enumerate(fixtures)], fmt="maxwell-json")
    paimon = sorted((SHARED / "conformance" / "paimon" / "maxwell").rglob("*.txt"))
    land_values(lakehouse, "maxwell-json", {f"paimon.db{i}.t": paimon_messages(path) for i, path in enumerate(paimon)})

    assert taken_by_jvm(lakehouse, "parse_maxwell", topic, MAXWELL_EDGES) == expected_taken(MAXWELL_EDGES)
    assert jvm_share(lakehouse, "parse_maxwell", "bench.%") == 1.0, "the bench's messages are all common"
    assert abs(jvm_share(lakehouse, "parse_maxwell", "fixtures.%") - 5 / 9) < 1e-4, "fixtures 01-05 are common"
    if paimon:
        assert jvm_share(lakehouse, "parse_maxwell", "paimon.%") == 1.0, "Paimon's rows are all common"
    assert_same_rows(lakehouse, minimum=len(MAXWELL_EDGES) + len(bench) + len(fixtures))
