"""Which parser reads a record (SPEC, "Formats"): the format given at ingest, else the format of
the longest topic pattern (the cdc_topic_formats seed and var) that matches its topic, else the
one its message's shape says. The routing query of macros/cdc_new_records.sql decides it once
per run, for every (topic, ingest format) among the new records."""

from __future__ import annotations

import json

DEBEZIUM = (
    '{{"before":null,"after":{{"id":{id},"name":"a"}},"source":{{"db":"shop","table":"{table}",'
    '"ts_ms":1700000000000,"file":"binlog.000001","pos":{id}}},"op":"c","ts_ms":1700000000000}}'
)
CANAL = (
    '{{"data":[{{"id":"{id}","name":"b"}}],"database":"shop","table":"{table}","pkNames":["id"],'
    '"type":"INSERT","es":1700000000000,"ts":1700000000001,"id":{id},"isDdl":false,'
    '"mysqlType":{{"id":"int","name":"varchar(10)"}},"sqlType":{{"id":4,"name":12}},"old":null}}'
)


def test_a_record_is_read_by_its_ingest_format_else_the_longest_pattern_else_its_shape(lakehouse):
    # shop.orders matches both patterns: the longer says debezium-json (the shorter one's
    # canal-json parser would quarantine every message)
    lakehouse.ingest([DEBEZIUM.format(id=i, table="orders") for i in (1, 2, 3)], topic="shop.orders")
    # shop.items matches the shorter only; two more of its records were given a format at ingest
    lakehouse.ingest([CANAL.format(id=i, table="items") for i in (1, 2)], topic="shop.items")
    lakehouse.ingest([DEBEZIUM.format(id=i, table="items") for i in (10, 11)], fmt="debezium-json",
                     topic="shop.items")
    # no pattern matches: the message's shape (a payload without Debezium's wrapper)
    lakehouse.ingest([DEBEZIUM.format(id=i, table="users") for i in (1, 2)], topic="other.users")
    patterns = {"^shop[.]": "canal-json", "^shop[.]orders$": "debezium-json"}
    lakehouse.build("--vars", json.dumps({"cdc_topic_formats": patterns}), tests=False)

    parsed = {
        (r["kafka_topic"], r["source_format"], r["source_table"]): r["changes"]
        for r in lakehouse.rows(
            "select kafka_topic, source_format, source_table, count(*) as changes "
            "from silver.cdc_changes group by kafka_topic, source_format, source_table"
        )
    }
    assert parsed == {
        ("shop.orders", "debezium-json", "orders"): 3,
        ("shop.items", "canal-json", "items"): 2,
        ("shop.items", "debezium-json", "items"): 2,
        ("other.users", "debezium-flat", "users"): 2,  # a Debezium payload without its wrapper
    }
    assert lakehouse.rows("select * from silver.cdc_quarantine") == []
