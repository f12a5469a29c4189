"""The fast parsers (jvm/functions, FastParsers) give the rows of the SQL parsers they stand in for.

A fast parser reads the common message of its format in one pass in the JVM and returns the
parser contract's columns; any other message it leaves to the SQL parser of its format
(macros/cdc_change_columns.sql, cdc_fast_parsers). The SQL parsers stay the definition of each
format, so silver.cdc_parsed is built here twice over the same bronze records, once with the
fast parsers off (``cdc_fast_parsers: false``) and once on, and every row must be the same:
the project's fixtures of the format, messages of the benchmark's generator, hand-written
messages at the edges of "common" (exact numbers, escapes, Unicode, keys with and without a
schema wrapper, every source position, nested values, schemas, tombstones, malformed text)
and, when ../shared is beside the checkout, Apache Paimon's real messages.
"""

from __future__ import annotations

from conftest import DBT_TARGET, SHARED
from fast_parser_check import (
    FIXTURES,
    Edge,
    assert_same_rows,
    bench_lines,
    expected_taken,
    generate,
    jvm_share,
    land_edges,
    land_values,
    lines_of,
    taken_by_jvm,
)

#: Hand-written debezium-json messages: (key, value). The common ones the JVM reads; the rest
#: (marked "sql") it must leave to the SQL parser.
DEBEZIUM_EDGES: list[Edge] = [
    ("common", '{"id": 1}',
     '{"before": null, "after": {"id": 1, "price": 9.999999999999999093266253, "big": 123456789012345678901234567890,'
     ' "name": "caf\\u00e9 \\"q\\" \\\\ \\/ \\n \\u0001 \\ud83d\\ude00 中", "ok": true, "nothing": null, "f": 1.5e-7},'
     ' "source": {"db": "shop", "table": "items", "file": "mysql-bin.000012", "pos": 4567, "row": 1,'
     ' "ts_ms": 1700000000123, "gtid": "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"}, "op": "c", "ts_ms": 1700000000200}'),
    ("common update, key in a schema wrapper",
     '{"schema": {"type": "struct"}, "payload": {"id": 2}}',
     '{"payload": {"before": {"id": 2, "v": "a"}, "after": {"id": 2, "v": "b"}, "source": {"db": "shop",'
     ' "table": "items", "file": "mysql-bin.000012", "pos": 5000, "row": 0, "ts_ms": 0}, "op": "u",'
     ' "ts_ms": 1700000001}}'),
    ("common delete, flat, OMS position", '{"id": 3}',
     '{"before": {"id": 3}, "after": null, "source": {"db": "shop", "table": "items", "pos": "99@1700000000",'
     ' "ts_ms": "1700000000000"}, "op": "d", "ts_ms": 1700000000300,'
     ' "transaction": {"id": "tx-9", "total_order": 1}}'),
    ("common, PostgreSQL", None,
     '{"before": null, "after": {"id": 4}, "source": {"db": "pg", "schema": "public", "table": "items",'
     ' "lsn": 24023128, "txId": 555, "ts_ms": 1700000000000}, "op": "r", "ts_ms": 1700000000400}'),
    ("common, Oracle, no table in the source", '{"ID": "5"}',
     '{"before": null, "after": {"ID": "5"}, "source": {"scn": "000123456", "ts_ms": -5},'
     ' "op": "c", "ts_ms": 1700000000400}'),
    ("common, no source at all", '{}',
     '{"after": {"id": 6}, "op": "i"}'),
    ("common, whitespace", ' { "id" : 7 } ',
     ' {\n "after" : { "id" : 7 } ,\n "op" : "c" ,\n "source" : { "file" : "bin.9" , "pos" : 10 } } \n'),
    ("common, a schema",
     '{"schema": {"type": "struct", "fields": [{"field": "id", "type": "int64"}]}, "payload": {"id": 8}}',
     '{"schema": {"type": "struct", "fields": [{"field": "before", "type": "struct"}, {"field": "after",'
     ' "type": "struct", "optional": true, "fields": [{"field": "id", "type": "int64", "optional": false},'
     ' {"field": "price", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,'
     ' "parameters": {"scale": "10", "connect.decimal.precision": 30}}, {"field": "t\u00e9", "type": "string",'
     ' "parameters": {}}]}, {"field": "op", "type": "string"}]},'
     ' "payload": {"after": {"id": 8, "price": "AeJA", "t\u00e9": "x"}, "op": "c",'
     ' "source": {"file": "bin.1", "pos": 1}}}'),
    ("common, a schema with arrays (their items)", None,
     '{"schema": {"type": "struct", "fields": [{"field": "after", "type": "struct", "fields": ['
     '{"field": "id", "type": "int64"}, {"field": "tags", "type": "array", "optional": true,'
     ' "items": {"type": "string", "optional": true}}, {"field": "prices", "type": "array", "items":'
     ' {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,'
     ' "parameters": {"scale": "2", "connect.decimal.precision": 5}}}, {"field": "bits", "type": "bytes",'
     ' "name": "io.debezium.data.Bits", "version": 1, "parameters": {"length": "10"}}]}]},'
     ' "payload": {"after": {"id": 84, "tags": null, "prices": null, "bits": "AQI="}, "op": "c",'
     ' "source": {"file": "bin.1", "pos": 1}}}'),
    ("common, a schema without the after field", None,
     '{"schema": {"type": "struct", "fields": [{"field": "op", "type": "string"}]},'
     ' "payload": {"after": {"id": 81}, "op": "c", "source": {"file": "bin.1", "pos": 1}}}'),
    ("sql: a schema naming a column twice", None,
     '{"schema": {"type": "struct", "fields": [{"field": "after", "fields": [{"field": "id", "type": "int64"},'
     ' {"field": "id", "type": "int32"}]}]}, "payload": {"after": {"id": 82}, "op": "c"}}'),
    ("sql: a schema and a null payload", None, '{"schema": {"type": "struct"}, "payload": null}'),
    ("common, a position ending in a line break", '{"id": 83}',
     '{"after": {"id": 83}, "op": "c", "source": {"file": "mysql-bin.000012", "pos": "4568\\n", "row": "0\\r\\n"}}'),
    ("sql: a nested value", '{"id": 9}',
     '{"after": {"id": 9, "doc": {"a": [1, 2]}}, "op": "c", "source": {"file": "bin.1", "pos": 2}}'),
    ("sql: SQL Server", '{"id": 10}',
     '{"after": {"id": 10}, "op": "c", "source": {"change_lsn": "00000027:00000758:0003", "ts_ms": 1}}'),
    ("sql: a DDL event", None,
     '{"source": {"db": "shop"}, "ddl": "ALTER TABLE items ADD c INT", "databaseName": "shop"}'),
    ("sql: a transaction marker", None, '{"status": "BEGIN", "id": "tx-1", "event_count": null}'),
    ("common, a tombstone", '{"id": 3}', None),
    ("sql: a column twice", '{"id": 11}', '{"after": {"id": 11, "id": 12}, "op": "c"}'),
    ("sql: a fraction of a millisecond", '{"id": 12}', '{"after": {"id": 12}, "op": "c", "ts_ms": 1700000000000.5}'),
    ("sql: invalid JSON", '{"id": 13}', '{"after": {"id": 13}, "op": "c"'),
    ("sql: single quotes", '{"id": 14}', "{'after': {'id': 14}, 'op': 'c'}"),
    ("sql: a string holding U+0000", '{"id": 15}', '{"after": {"id": 15, "s": "\\u0000x"}, "op": "c"}'),
    ("sql: a number as op", '{"id": 16}', '{"after": {"id": 16}, "op": 1}'),
    ("sql: a key that is not an object", '16', '{"after": {"id": 16}, "op": "c"}'),
]


def test_debezium_fast_parser_gives_the_sql_parsers_rows(lakehouse):
    topic = "fast.shop.items"
    land_edges(lakehouse, "debezium-json", topic, DEBEZIUM_EDGES)
    bench = bench_lines("debezium-json")
    lakehouse.ingest(bench, fmt="debezium-json")
    fixtures = [line for name in ("cloudcanal.jsonl", "dtle.jsonl", "oms_debezium.jsonl")
                for line in lines_of(FIXTURES / "debezium-json" / name)]
    lakehouse.ingest(fixtures, fmt="debezium-json")
    paimon = sorted((SHARED / "conformance" / "paimon" / "debezium").rglob("*.txt"))
    land_values(lakehouse, "debezium-json", {f"paimon.db{i}.t": lines_of(path) for i, path in enumerate(paimon)})

    assert taken_by_jvm(lakehouse, "parse_debezium", topic, DEBEZIUM_EDGES) == expected_taken(DEBEZIUM_EDGES)
    assert jvm_share(lakehouse, "parse_debezium", "bench.%") == 1.0, "the bench's messages are all common"
    assert_same_rows(lakehouse, minimum=len(DEBEZIUM_EDGES) + len(bench))


def test_common_messages_alone_compile_no_sql_parser(lakehouse):
    # Every message of the four bench formats is common (tombstones too): silver's write
    # compiles in the fast parsers alone, its post-hook finds no placeholder and runs no SQL
    # parser, and the rows are the same as the SQL parsers give.
    lines = [line for fmt in generate.FORMATS for line in bench_lines(fmt, changes=1500)]
    lakehouse.ingest(lines)
    topic_formats = {"cdc_topic_formats": generate.topic_formats()}
    assert_same_rows(lakehouse, minimum=len(lines), extra_vars=topic_formats)
    compiled = (DBT_TARGET / "run" / "cdc_lakehouse" / "models" / "silver" / "cdc_parsed.sql").read_text()
    for function in ("parse_debezium", "parse_canal", "parse_maxwell", "parse_oms"):
        assert f"cdc_lakehouse.json.{function}(value_text" in compiled
    assert lakehouse.rows("describe history silver.cdc_parsed limit 1")[0]["operation"] != "MERGE"
    assert "from_json" not in compiled.split("unparsable as (")[0]
    kinds = lakehouse.rows("select record_kind, count(*) as n from silver.cdc_parsed group by record_kind")
    assert {r["record_kind"] for r in kinds} == {"change", "control"}


def test_left_messages_are_parsed_after_the_write_and_a_stopped_build_heals(lakehouse, tmp_path):
    # The messages the fast parser leaves get placeholder rows in silver's write; its post-hook
    # swaps in the SQL parser's rows with one MERGE, the version the run's row of
    # meta.cdc_build_progress describes (the next build reads its watermark there). A
    # placeholder that a build stopped before its post-hook left behind is parsed by the next
    # build, though it brings no new record.
    topic = "left.shop.items"
    land_edges(lakehouse, "debezium-json", topic, DEBEZIUM_EDGES)
    lakehouse.build("--select", "+cdc_parsed", tests=False)
    placeholders = "select * from silver.cdc_parsed where quarantine_reason like 'left to the SQL parser:%'"
    assert lakehouse.rows(placeholders) == []
    last = lakehouse.rows("describe history silver.cdc_parsed limit 1")[0]
    assert last["operation"] == "MERGE"
    assert lakehouse.progress("silver.cdc_parsed", last["version"])["table"] == "silver.cdc_parsed"
    left = sum(1 for name, _, _ in DEBEZIUM_EDGES if name.startswith("sql:"))
    assert left > 3
    by_offset = lakehouse.rows(f"select kafka_offset, count(*) as n from silver.cdc_parsed "
                               f"where kafka_topic = '{topic}' group by kafka_offset")
    assert sorted(r["kafka_offset"] for r in by_offset) == list(range(len(DEBEZIUM_EDGES)))
    # ids are the coordinates, whichever parser wrote the row
    ids = lakehouse.rows(f"select record_id, kafka_topic, kafka_partition, kafka_offset, row_index "
                         f"from silver.cdc_parsed where kafka_topic = '{topic}'")
    assert ids and all(
        r["record_id"] == f"{r['kafka_topic']}:{r['kafka_partition']}:{r['kafka_offset']}:{r['row_index']}"
        for r in ids), ids

    # a build stopped after the write: one record of a single row back to its placeholder, with
    # the sha256 id an earlier cdc-lakehouse gave it (the MERGE matches it by its coordinates)
    offset = next(i for i, (name, _, _) in enumerate(DEBEZIUM_EDGES) if name == "sql: a column twice")
    columns = "record_kind, op, pk, after_image, quarantine_reason, apply_order"
    row_of = f"select {columns} from silver.cdc_parsed where kafka_topic = '{topic}' and kafka_offset = {offset}"
    parsed = lakehouse.rows(row_of)
    assert len(parsed) == 1 and parsed[0]["record_kind"] == "change"
    lakehouse.spark.sql(f"""
        update silver.cdc_parsed
        set record_kind = 'quarantine', op = null, pk = null, after_image = null, apply_order = null,
            record_id = sha2(concat_ws('|', kafka_topic, kafka_partition, kafka_offset, row_index), 256),
            quarantine_reason = 'left to the SQL parser: the fast parser stopped here'
        where kafka_topic = '{topic}' and kafka_offset = {offset}""")
    assert len(lakehouse.rows(placeholders)) == 1
    assert LOOK in lakehouse.logged_build(tmp_path / "heal", "--select", "cdc_parsed")
    assert lakehouse.rows(placeholders) == []
    assert lakehouse.rows(row_of) == parsed
    healed = lakehouse.rows(f"select record_id from silver.cdc_parsed "
                            f"where kafka_topic = '{topic}' and kafka_offset = {offset}")
    assert healed == [{"record_id": f"{topic}:0:{offset}:0"}]

    # the run that took them recorded silver's newest commit (a metastore property): a build
    # with nothing new does not look for placeholders at all, and one after a commit to
    # silver looks again
    assert LOOK not in lakehouse.logged_build(tmp_path / "idle", "--select", "cdc_parsed")
    lakehouse.spark.sql(f"update silver.cdc_parsed set batch_id = batch_id where kafka_topic = '{topic}'")
    assert LOOK in lakehouse.logged_build(tmp_path / "after-a-commit", "--select", "cdc_parsed")


#: the post-hook's look for placeholders (cdc_parse_leftovers), as dbt's log shows it
LOOK = "cast(min(ingested_at) as string) as first_ingested"


def test_values_that_are_not_utf8_are_quarantined_in_every_branch(lakehouse):
    # Routing reads no value: a fast parser's branch quarantines its own records whose value
    # is not UTF-8, the unparsable branch those of a format read by SQL alone (ogg-json here)
    # and those of no format. Same rows with the fast parsers off.
    topic = "bytes.shop.items"
    land_edges(lakehouse, "debezium-json", topic, DEBEZIUM_EDGES[:3])
    bad = [(topic, "'debezium-json'", 100), ("bytes.ogg.items", "'ogg-json'", 0), ("bytes.unknown", "null", 0)]
    for bad_topic, fmt, offset in bad:
        lakehouse.spark.sql(f"""
            insert into bronze.kafka_records by name
            select * except (topic, `offset`, value, format, ingested_at),
                '{bad_topic}' as topic, cast({offset} as bigint) as `offset`, unhex('7B80FF7D') as value,
                {fmt} as format, ingested_at + interval 2 milliseconds as ingested_at
            from bronze.kafka_records where topic = '{topic}' and `offset` = 0""")
    assert_same_rows(lakehouse, minimum=3 + len(bad))
    reasons = lakehouse.rows("select kafka_topic, source_format, quarantine_reason from silver.cdc_parsed "
                             "where record_kind = 'quarantine' order by kafka_topic")
    not_utf8 = "value is not valid UTF-8"
    assert reasons == [
        {"kafka_topic": "bytes.ogg.items", "source_format": "ogg-json", "quarantine_reason": not_utf8},
        {"kafka_topic": topic, "source_format": "debezium-json", "quarantine_reason": not_utf8},
        {"kafka_topic": "bytes.unknown", "source_format": None, "quarantine_reason": not_utf8},
    ]
