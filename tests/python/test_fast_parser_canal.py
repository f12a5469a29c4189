"""The canal-json fast parser (jvm/functions, CanalFast) gives the rows of the SQL parser.

``cdc_lakehouse.json.parse_canal`` reads the common canal-json message (one row in ``data``,
a DML type, flat rows, pkNames spelled as the row spells them, matching type maps) in one pass
in the JVM; any other message it leaves to macros/formats/canal_json.sql. silver.cdc_parsed is
built twice over the same bronze records, once with the fast parsers off and once on, and
every row must be the same: hand-written messages at the edges of "common" (exact numbers,
escapes, Unicode, UPDATEs with partial, extra and absent old rows, tables without key, type
maps of every shape, several rows, DDL, keys in another case, nested values, malformed text),
messages of the benchmark's generator, the project's canal-json fixtures and, when ../shared
is beside the checkout, Apache Paimon's real canal messages.
"""

from __future__ import annotations

from canal_messages import paimon_messages
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

TYPES = ('"mysqlType": {"id": "bigint(20)", "a": "varchar(64)", "b": "decimal(65,30)"},'
         ' "sqlType": {"id": -5, "a": 12, "b": 3}')


def canal(data: str, typ: str = "INSERT", old: str = "null", keys: str = '["id"]', types: str = TYPES,
          es: str = "1700000000123", seq: str = "7", table: str = '"items"', extra: str = "") -> str:
    """A canal-json message from JSON fragments (so that numbers stay exactly as written)."""
    return (f'{{"data": {data}, "database": "shop", "es": {es}, "gtid": "", "id": {seq}, "isDdl": false,'
            f' {types + "," if types else ""} "old": {old}, "pkNames": {keys}, "sql": "",'
            f' "table": {table}, "ts": 1700000000200, "type": "{typ}"{extra}}}')


ROW = '[{"id": "1", "a": "x", "b": "1.5"}]'

#: Hand-written canal-json messages: (name, key, value). The common ones the JVM reads; the
#: rest (named "sql: ...") it must leave to the SQL parser.
CANAL_EDGES: list[Edge] = [
    ("common insert, strings", None, canal(ROW)),
    ("common insert, bare exact numbers", '{"id": 2}',
     canal('[{"id": 2, "a": 9.999999999999999093266253,'
           ' "b": 12345678901234567890123456789012345.12345678901234567890123456789012,'
           ' "ok": true, "no": false, "f": 1.5e-7, "z": -0, "e": 1E+5, "nothing": null}]',
           types='"mysqlType": {"id": "bigint(20)", "a": "double", "b": "decimal(65,30)"},'
                 ' "sqlType": {"id": -5, "a": 8, "b": 3}')),
    ("common, unicode and escapes", None,
     canal('[{"id": "3", "a": "caf\\u00e9 \\"q\\" \\\\ \\/ \\n \\t \\u0001 \\u001f \\ud83d\\ude00 中 \\u2028 <>&\'",'
           ' "名字": "值", "": "empty name", "b": ""}]',
           types='"mysqlType": {"id": "bigint(20)", "a": "varchar(64) \\"x\\" \\u00e9 😀", "名字": "text",'
                 ' "\\ud83d\\ude00": "enum(\'😀\')"}, "sqlType": {"id": -5, "a": 12, "名字": -1, "😀": 1}')),
    ("common, characters outside the BMP, as they are and escaped", None,
     canal('[{"id": "36", "a": "😀 \\ud83d\\ude00 \\ud800\\udc00 𝄞", "😀": "\\ud83d\\ude00"}]', "UPDATE",
           '[{"a": "\\ud83d\\ude01", "😁": "😁"}]')),
    ("common, a lone surrogate", None, canal('[{"id": "37", "a": "x \\ud83d y", "\\udc00": "z"}]')),
    ("common update, partial old", None, canal('[{"id": "4", "a": "y", "b": "2"}]', "UPDATE", '[{"b": "1"}]')),
    ("common update, old naming a column data lacks", None,
     canal('[{"id": "5", "a": "y"}]', "UPDATE", '[{"gone": "g", "a": "x", "also": 7}]')),
    ("common update, old with a null", None,
     canal('[{"id": "6", "a": "y", "b": null}]', "UPDATE", '[{"a": null, "b": "0"}]')),
    ("common update, old null", None, canal('[{"id": "7", "a": "y"}]', "UPDATE", "null")),
    ("common update, old empty", None, canal('[{"id": "8", "a": "y"}]', "UPDATE", "[]")),
    ("common update, old an empty row", None, canal('[{"id": "9", "a": "y"}]', "UPDATE", "[{}]")),
    ("common update, old a null row", None, canal('[{"id": "9", "a": "z"}]', "UPDATE", "[null]")),
    ("common update, old absent", None,
     canal('[{"id": "10", "a": "y"}]', "UPDATE").replace('"old": null, ', "")),
    ("common update, the key changed", None, canal('[{"id": "12", "a": "y"}]', "UPDATE", '[{"id": "11"}]')),
    ("common update, old longer than data", None,
     canal('[{"id": "13", "a": "y"}]', "UPDATE", '[{"a": "x"}, {"a": "w", "b": 1}]')),
    ("common update, bare numbers in old", None, canal('[{"id": 14, "b": 2.50}]', "UPDATE", '[{"b": 1.25e3}]')),
    ("common delete", None, canal('[{"id": "15", "a": "x", "b": "1"}]', "DELETE")),
    ("common delete with old rows", None, canal('[{"id": "16", "a": "x"}]', "DELETE", '[{"a": "w"}]')),
    ("common insert with old rows", None, canal('[{"id": "17", "a": "x"}]', "INSERT", '[{"a": "w"}]')),
    ("common, no key (empty pkNames): a multiset", None,
     canal('[{"v0": "a", "v1": "1"}]', keys="[]", types="")),
    ("common update, no key", None, canal('[{"v0": "a", "v1": "2"}]', "UPDATE", '[{"v1": "1"}]', keys="[]", types="")),
    ("common, pkNames null", None, canal('[{"id": "18"}]', keys="null")),
    ("common, pkNames absent", None, canal('[{"id": "19"}]').replace('"pkNames": ["id"], ', "")),
    ("common, composite key in another order", None,
     canal('[{"id": "20", "a": "x", "b": "2"}]', keys='["b", "id"]')),
    ("common, a column cased differently beside the key", None,
     canal('[{"id": "21", "ID": "other"}]', keys='["id"]')),
    ("common, no type maps", None, canal('[{"id": "22"}]', types="")),
    ("common, null type maps", None, canal('[{"id": "23"}]', types='"mysqlType": null, "sqlType": null')),
    ("common, type codes as strings, names as numbers", None,
     canal('[{"id": "24"}]', types='"mysqlType": {"id": 5, "a": true}, "sqlType": {"id": "-5", "a": "16"}')),
    ("common, type maps naming other columns than the row", None,
     canal('[{"id": "25"}]', types='"mysqlType": {"q": "int"}, "sqlType": {"q": 4}')),
    ("common, es and id as strings", None, canal('[{"id": "26"}]', es='"1700000000999"', seq='"0042"')),
    ("common, es in seconds, huge id", None,
     canal('[{"id": "27"}]', es="1700000000", seq="123456789012345678901234567890123456789")),
    ("common, negative es, id a fraction", None, canal('[{"id": "28"}]', es="-5", seq="1.5")),
    ("common, es and id absent", None,
     canal('[{"id": "29"}]').replace('"es": 1700000000123, ', "").replace('"id": 7, ', "")),
    ("common, es and id null, id empty", None, canal('[{"id": "30"}]', es="null", seq='""')),
    ("common, gtid, no database, isDdl absent", None,
     canal('[{"id": "31"}]', extra=', "gtid2": 1').replace('"gtid": ""', '"gtid": "3e11fa47:23"')
     .replace('"database": "shop", ', "").replace('"isDdl": false, ', "")),
    ("common, isDdl as a string, table a number", None,
     canal('[{"id": "32"}]', table="42").replace('"isDdl": false', '"isDdl": "false"')),
    ("common, other fields of any shape", None,
     canal('[{"id": "33"}]', extra=', "extra": {"nested": [1, {"a": null}]}, "sql2": [1], "ts2": "x"')
     .replace('"sql": ""', '"sql": {"a": 1}')),
    ("common, whitespace and new lines", None,
     '\n { "data" : [ { "id" : "34" , "a" : 1 } ] ,\n\t"type" : "INSERT" , "table" : "items" ,'
     ' "pkNames" : [ "id" ] , "es" : 1700000000000 }\n'),
    ("common, columns named like the envelope's fields", None,
     canal('[{"id": "35", "type": "t", "data": "d", "old": "o", "_corrupt": "c"}]')),
    ("sql: two rows in data", None, canal('[{"id": "40"}, {"id": "41"}]')),
    ("sql: two rows in data, an UPDATE", None,
     canal('[{"id": "42", "a": "y"}, {"id": "43", "a": "y"}]', "UPDATE", '[{"a": "x"}, {"a": "w"}]')),
    ("sql: no rows in data", None, canal("[]")),
    ("sql: a DELETE with its rows in old", None, canal("[]", "DELETE", '[{"id": "44"}]')),
    ("sql: data null", None, canal("null")),
    ("sql: data not an array", None, canal('{"id": "45"}')),
    ("sql: a row that is not an object", None, canal('["x"]')),
    ("sql: a null row", None, canal("[null]")),
    ("sql: an empty row", None, canal("[{}]", keys="[]")),
    ("sql: old not an array", None, canal('[{"id": "46"}]', "UPDATE", '"x"')),
    ("sql: old holding a string", None, canal('[{"id": "47"}]', "UPDATE", '["x"]')),
    ("sql: a DDL", None,
     '{"data": null, "database": "shop", "es": 1700000000000, "id": 8, "isDdl": true, "mysqlType": null,'
     ' "old": null, "pkNames": null, "sql": "ALTER TABLE items ADD c INT", "sqlType": null, "table": "items",'
     ' "ts": 1700000000001, "type": "ALTER"}'),
    ("sql: a TRUNCATE", None,
     '{"data": null, "database": "shop", "es": 1700000000000, "id": 9, "isDdl": true, "old": null,'
     ' "pkNames": null, "sql": "TRUNCATE TABLE items", "table": "items", "type": "TRUNCATE"}'),
    ("sql: isDdl true on an INSERT", None, canal('[{"id": "48"}]').replace('"isDdl": false', '"isDdl": true')),
    ("sql: isDdl TRUE as a string", None, canal('[{"id": "49"}]').replace('"isDdl": false', '"isDdl": "TRUE"')),
    ("sql: tableChanges on a DML", None,
     canal('[{"id": "50"}]', extra=', "tableChanges": {"table": {"columns": [{"name": "id", "jdbcType": -5,'
           ' "position": 0, "typeExpression": "bigint(20)", "typeName": "bigint"}]}, "type": "ALTER"}')),
    ("sql: pkNames in another case", None, canal('[{"K1": "7", "v": "seven"}]', keys='["k1"]', types="")),
    ("sql: pkNames naming an absent column", None, canal('[{"x": "51"}]')),
    ("sql: pkNames repeated", None, canal('[{"id": "52"}]', keys='["id", "id"]')),
    ("sql: pkNames repeated in another case", None, canal('[{"id": "53"}]', keys='["id", "ID"]')),
    ("sql: pkNames holding a null", None, canal('[{"id": "54"}]', keys='["id", null]')),
    ("sql: pkNames holding a number", None, canal('[{"1": "55"}]', keys="[1]")),
    ("sql: pkNames not an array", None, canal('[{"id": "56"}]', keys='"id"')),
    ("sql: a nested value", None, canal('[{"id": "57", "doc": {"a": [1, 2]}}]')),
    ("sql: an array value", None, canal('[{"id": "58", "tags": ["a"]}]')),
    ("sql: a nested value in old", None, canal('[{"id": "59"}]', "UPDATE", '[{"doc": {"a": 1}}]')),
    ("sql: a column twice", None, canal('[{"id": "60", "id": "61"}]')),
    ("sql: a field twice", None, canal('[{"id": "62"}]', extra=', "type": "DELETE"')),
    ("sql: a field in another case", None, canal('[{"id": "63"}]', extra=', "Table": "other"')),
    ("sql: a _corrupt field", None, canal('[{"id": "64"}]', extra=', "_corrupt": "x"')),
    ("sql: type maps naming other columns", None,
     canal('[{"id": "65"}]', types='"mysqlType": {"id": "int", "a": "text"}, "sqlType": {"id": 4}')),
    ("sql: type maps in another order", None,
     canal('[{"id": "66"}]', types='"mysqlType": {"id": "int", "a": "text"}, "sqlType": {"a": -1, "id": 4}')),
    ("sql: only mysqlType", None, canal('[{"id": "67"}]', types='"mysqlType": {"id": "int"}')),
    ("sql: only sqlType", None, canal('[{"id": "68"}]', types='"sqlType": {"id": 4}')),
    ("sql: a null type name", None, canal('[{"id": "69"}]', types='"mysqlType": {"id": null}, "sqlType": {"id": 4}')),
    ("sql: a null type code", None,
     canal('[{"id": "70"}]', types='"mysqlType": {"id": "int"}, "sqlType": {"id": null}')),
    ("sql: empty type maps", None, canal('[{"id": "71"}]', types='"mysqlType": {}, "sqlType": {}')),
    ("sql: type maps of another shape", None, canal('[{"id": "72"}]', types='"mysqlType": "int(11)", "sqlType": [4]')),
    ("sql: a nested type", None,
     canal('[{"id": "73"}]', types='"mysqlType": {"id": {"t": "int"}}, "sqlType": {"id": 4}')),
    ("sql: no table", None, canal('[{"id": "74"}]', table="null")),
    ("sql: an unknown op", None, canal('[{"id": "75"}]', "UPSERT")),
    ("sql: a lower-case op", None, canal('[{"id": "76"}]', "insert")),
    ("sql: a number as type", None, canal('[{"id": "77"}]').replace('"type": "INSERT"', '"type": 1')),
    ("sql: no type", None, canal('[{"id": "78"}]').replace(', "type": "INSERT"', "")),
    ("sql: es with a fraction", None, canal('[{"id": "79"}]', es="1700000000000.5")),
    ("sql: es as a date-time", None, canal('[{"id": "80"}]', es='"2023-11-14 22:13:20"')),
    ("sql: es empty", None, canal('[{"id": "81"}]', es='""')),
    ("sql: es of 16 digits, leading zeros", None, canal('[{"id": "82"}]', es='"0001700000000000"')),
    ("sql: id ending in a new line", None, canal('[{"id": "83"}]', seq='"5\\n"')),
    ("sql: database an object", None, canal('[{"id": "84"}]').replace('"database": "shop"', '"database": {"a": 1}')),
    ("sql: a string holding U+0000", None, canal('[{"id": "85", "s": "\\u0000"}]')),
    ("sql: invalid JSON", None, canal('[{"id": "86"}]')[:-1]),
    ("sql: trailing text", None, canal('[{"id": "87"}]') + " x"),
    ("sql: single quotes", None, "{'data': [{'id': '88'}], 'type': 'INSERT', 'table': 'items'}"),
    ("sql: not JSON", None, "not json at all"),
    ("sql: an array", None, "[" + canal('[{"id": "89"}]') + "]"),
    ("sql: a tombstone", None, None),
]


def test_canal_fast_parser_gives_the_sql_parsers_rows(lakehouse):
    topic = "fast.shop.items"
    land_edges(lakehouse, "canal-json", topic, CANAL_EDGES)
    bench = bench_lines("canal-json")
    lakehouse.ingest(bench, fmt="canal-json")
    vendor = {f"canal.vendor.{path.stem}": lines_of(path) for path in sorted((FIXTURES / "canal-json").glob("*.jsonl"))}
    paimon = sorted((SHARED / "conformance" / "paimon" / "canal").rglob("*.txt"))
    land_values(lakehouse, "canal-json",
                vendor | {f"paimon.canal.t{i}": paimon_messages(path) for i, path in enumerate(paimon)})

    assert taken_by_jvm(lakehouse, "parse_canal", topic, CANAL_EDGES) == expected_taken(CANAL_EDGES)
    assert jvm_share(lakehouse, "parse_canal", "bench.%") == 1.0, "the bench's messages are all common"
    assert_same_rows(lakehouse, minimum=len(CANAL_EDGES) + len(bench))
