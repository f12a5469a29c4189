"""Which parser reads a record (SPEC, "Formats"): the format given at ingest, else the format of
the longest topic pattern (the cdc_topic_formats seed and var) that matches its topic, else the
one its message's shape says. macros/cdc_new_records.sql decides it once per run, for every
(topic, ingest format) among the new records: from the loader's commits in bronze's log, which
name each batch's topics and format, or, when the log cannot tell, by a query over the records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DEBEZIUM = (
    '{{"before":null,"after":{{"id":{id},"name":"a"}},"source":{{"db":"shop","table":"{table}",'
    '"ts_ms":1700000000000,"file":"binlog.000001","pos":{id}}},"op":"c","ts_ms":1700000000000}}'
)
CANAL = (
    '{{"data":[{{"id":"{id}","name":"b"}}],"database":"shop","table":"{table}","pkNames":["id"],'
    '"type":"INSERT","es":1700000000000,"ts":1700000000001,"id":{id},"isDdl":false,'
    '"mysqlType":{{"id":"int","name":"varchar(10)"}},"sqlType":{{"id":4,"name":12}},"old":null}}'
)
# the routing query over bronze's new records
ROUTING_QUERY = "count(*) as records, max(ingested_at) as up_to"


def _build_log(lakehouse, log_dir: Path, patterns: dict[str, str]) -> str:
    """A build of every model with ``patterns`` as the cdc_topic_formats var; its debug log."""
    return lakehouse.logged_build(log_dir, "--vars", json.dumps({"cdc_topic_formats": patterns}))


def _changes(lakehouse) -> dict[tuple[str, str, str], int]:
    return {
        (r["kafka_topic"], r["source_format"], r["source_table"]): r["changes"]
        for r in lakehouse.rows(
            "select kafka_topic, source_format, source_table, count(*) as changes "
            "from silver.cdc_changes group by kafka_topic, source_format, source_table"
        )
    }


def test_a_record_is_read_by_its_ingest_format_else_the_longest_pattern_else_its_shape(lakehouse, tmp_path):
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
    log = _build_log(lakehouse, tmp_path / "first", patterns)
    # routed from the loader's commits, not by a query over the records
    assert ROUTING_QUERY not in log
    assert _changes(lakehouse) == {
        ("shop.orders", "debezium-json", "orders"): 3,
        ("shop.items", "canal-json", "items"): 2,
        ("shop.items", "debezium-json", "items"): 2,
        ("other.users", "debezium-flat", "users"): 2,  # a Debezium payload without its wrapper
    }
    assert lakehouse.rows("select * from silver.cdc_quarantine") == []


def test_records_that_another_writer_committed_to_bronze_are_routed_by_a_query(lakehouse, tmp_path):
    # the loader's batch, then a commit of someone else's: its metadata does not say what it
    # landed, so the parse routes the run's records by the query, with the same rules
    lakehouse.ingest([DEBEZIUM.format(id=1, table="orders")], topic="shop.orders")
    value = DEBEZIUM.format(id=2, table="orders")
    lakehouse.spark.sql(
        "insert into bronze.kafka_records (topic, partition, offset, timestamp, key, value, headers, "
        "format, source, ingested_at, batch_id) "
        f"select 'shop.orders', 0, 1, null, null, cast('{value}' as binary), null, null, 'test', "
        "timestamp '2099-01-01 00:00:00', 'by-hand'"
    )
    patterns = {"^shop[.]": "canal-json", "^shop[.]orders$": "debezium-json"}
    log = _build_log(lakehouse, tmp_path / "by-hand", patterns)
    assert ROUTING_QUERY in log
    assert _changes(lakehouse) == {("shop.orders", "debezium-json", "orders"): 2}
    assert lakehouse.rows("select * from silver.cdc_quarantine") == []


# the query that matches the topic patterns against the topics the loader's commits name
PATTERN_QUERY = "as seeded_format from (select explode(array("


def _pattern_queries(log: str) -> list[str]:
    """The statements of ``log`` that asked the topic patterns, each cut to its topics."""
    return [part.split("))", 1)[0] for part in log.split(PATTERN_QUERY)[1:]]


def test_a_topic_s_pattern_is_asked_once_while_the_patterns_stay_the_same(lakehouse, tmp_path):
    # the parse's write records what the patterns gave its topics; a feed's next batch of the
    # same topics is routed by that record, without asking Spark to match the patterns again
    shop_debezium = {"^shop[.]": "debezium-json"}
    lakehouse.ingest([DEBEZIUM.format(id=1, table="orders")], topic="shop.orders")
    assert _pattern_queries(_build_log(lakehouse, tmp_path / "first", shop_debezium)) == ["'shop.orders'"]
    lakehouse.ingest([DEBEZIUM.format(id=2, table="orders")], topic="shop.orders")
    assert _pattern_queries(_build_log(lakehouse, tmp_path / "same", shop_debezium)) == []

    # a topic new to the record: only it is asked
    lakehouse.ingest([DEBEZIUM.format(id=3, table="orders")], topic="shop.orders")
    lakehouse.ingest([DEBEZIUM.format(id=5, table="items")], topic="shop.items")
    assert _pattern_queries(_build_log(lakehouse, tmp_path / "new-topic", shop_debezium)) == ["'shop.items'"]
    assert _changes(lakehouse) == {
        ("shop.orders", "debezium-json", "orders"): 3,
        ("shop.items", "debezium-json", "items"): 1,
    }

    # other patterns (the var here; the seed's checksum counts too): asked again, and followed
    lakehouse.ingest([DEBEZIUM.format(id=4, table="orders")], topic="shop.orders")
    lakehouse.ingest([CANAL.format(id=6, table="items")], topic="shop.items")
    items_canal = {**shop_debezium, "^shop[.]items$": "canal-json"}
    queries = _pattern_queries(_build_log(lakehouse, tmp_path / "other-patterns", items_canal))
    assert queries == ["'shop.items', 'shop.orders'"] or queries == ["'shop.orders', 'shop.items'"], queries
    assert _changes(lakehouse) == {
        ("shop.orders", "debezium-json", "orders"): 4,
        ("shop.items", "debezium-json", "items"): 1,
        ("shop.items", "canal-json", "items"): 1,
    }
    assert lakehouse.rows("select * from silver.cdc_quarantine") == []


def test_a_pattern_java_cannot_compile_stops_the_build_with_one_message_naming_it(lakehouse, tmp_path):
    """A topic pattern is a Java regular expression (Spark's rlike). One Java refuses failed the
    build with PatternSyntaxException and the join that met it, not saying that it came from the
    cdc_topic_formats var. The message now names the pattern and where it was given; a pattern
    of Java's own syntax, which Python's `re` would refuse (`\\p{Punct}`), still routes."""
    lakehouse.ingest([CANAL.format(id=i, table="items") for i in (1, 2)], topic="shop.items")
    with pytest.raises(AssertionError) as failed:
        _build_log(lakehouse, tmp_path / "bad", {"^shop[.](": "canal-json"})
    message = str(failed.value)
    assert ('the topic pattern "^shop[.](" (the var cdc_topic_formats) is not a regular expression as '
            "Java reads them (java.util.regex.Pattern); correct it there") in message, message
    assert "PatternSyntaxException" not in message and "\tat " not in message, message
    assert len(message.splitlines()) <= 6, message
    _build_log(lakehouse, tmp_path / "good", {r"^shop\p{Punct}": "canal-json"})
    assert _changes(lakehouse) == {("shop.items", "canal-json", "items"): 2}
