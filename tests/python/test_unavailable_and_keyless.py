"""Debezium's unavailable-value placeholder never reaches gold, and tables without a key are multisets.

PostgreSQL leaves an unchanged TOASTed column out of an UPDATE and Debezium writes a placeholder
in its place, in a form that fits the column type; a table without a key (REPLICA IDENTITY FULL)
may hold identical rows, and an update or delete of one copy must touch one copy. The real
databases show both in tests/python/test_real_postgres.py; these messages pin each rule down,
across builds (a stored previous version) and within one (a chain of placeholders).
"""

from __future__ import annotations

import json

from cdc_messages import DebeziumTable, envelope

PLACEHOLDER = "__debezium_unavailable_value"
PLACEHOLDER_BYTES = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="  # base64 of its bytes (bytea)
PLACEHOLDER_INTS = [ord(c) for c in PLACEHOLDER]  # int[] columns


def _state(lakehouse, table: str) -> dict[str, tuple[dict, list]]:
    rows = lakehouse.rows(
        f"select pk, row, unknown_columns from gold.cdc_current_state where source_table = '{table}'"
    )
    return {json.loads(r["pk"])["id"]: (json.loads(r["row"]), sorted(r["unknown_columns"])) for r in rows}


def test_unavailable_values_keep_the_previous_version(lakehouse):
    t = DebeziumTable("pg", "shop", "docs", ["id"])
    one = {"id": 1, "body": "long text one", "blob": "AAEC", "tags": ["a", "b"], "ints": [1, 2], "n": 1}
    two = {"id": 2, "body": "long text two", "blob": "AwQ=", "tags": ["c"], "ints": [3], "n": 1}
    gone = {"id": 4, "body": "short", "blob": "", "tags": [], "ints": [], "n": 1}
    t.insert(one)
    t.insert(two)
    t.insert(gone)
    # an update that leaves every TOASTed column out, in the first batch
    t.update(None, {**one, "body": PLACEHOLDER, "blob": PLACEHOLDER_BYTES, "tags": [PLACEHOLDER],
                    "ints": PLACEHOLDER_INTS, "n": 2})
    lakehouse.ingest(t.envelopes(), fmt="debezium-json")
    lakehouse.build(tests=False)
    assert _state(lakehouse, "docs")[1] == ({**one, "n": 2}, [])

    first = len(t.messages)
    # next batch: the stored version completes key 1; key 2 chains two placeholders in one
    # batch, the second after a real change of the column; key 3 has no earlier version
    t.update(None, {**one, "body": PLACEHOLDER, "blob": PLACEHOLDER_BYTES, "tags": [PLACEHOLDER],
                    "ints": PLACEHOLDER_INTS, "n": 3})
    t.update(None, {**two, "body": PLACEHOLDER, "n": 2})
    t.update(None, {**two, "body": "rewritten", "n": 3})
    t.update(None, {**two, "body": PLACEHOLDER, "n": 4})
    t.update(None, {"id": 3, "body": PLACEHOLDER, "blob": "BQ==", "tags": [], "ints": [], "n": 1})
    t.delete(gone)  # a delete beside the completed changes still deletes
    lakehouse.ingest(t.envelopes(t.messages[first:], first_offset=first), fmt="debezium-json")
    lakehouse.build()

    state = _state(lakehouse, "docs")
    assert sorted(state) == [1, 2, 3]
    assert state[1] == ({**one, "n": 3}, [])
    assert state[2] == ({**two, "body": "rewritten", "n": 4}, [])
    assert state[3] == ({"id": 3, "body": None, "blob": "BQ==", "tags": [], "ints": [], "n": 1}, ["body"])
    history = lakehouse.rows(
        "select pk, row from gold.cdc_history where source_table = 'docs' and row is not null"
    )
    assert not [r for r in history if PLACEHOLDER in r["row"] or PLACEHOLDER_BYTES in r["row"]]
    typed = lakehouse.rows("select id, body, _cdc_unknown_columns from gold.shop__docs order by id")
    # without a schema in the messages every column is text
    assert [(r["id"], r["body"], r["_cdc_unknown_columns"]) for r in typed] == [
        ("1", "long text one", []), ("2", "rewritten", []), ("3", None, ["body"]),
    ]


def _keyless_lines(t: DebeziumTable, first: int = 0) -> list[str]:
    """A table without a key: Debezium's record key is null."""
    return [envelope(t.topic, 0, first + i, None, v) for i, (_, v) in enumerate(t.messages[first:])]


def test_a_table_without_a_key_is_a_multiset(lakehouse):
    t = DebeziumTable("pg", "shop", "bag", [])
    row = {"item": "apple", "qty": 1}
    for _ in range(3):
        t.insert(row)
    t.update(row, {"item": "apple", "qty": 2})  # one copy changes
    t.delete(row, tombstone=False)  # one copy goes
    t.update(row, row)  # an update that changes nothing
    lakehouse.ingest(_keyless_lines(t), fmt="debezium-json")
    lakehouse.build(tests=False)

    def copies() -> list[tuple[str, int]]:
        rows = lakehouse.rows("select item, qty from gold.shop__bag order by item, qty")
        return [(r["item"], int(r["qty"])) for r in rows]

    assert copies() == [("apple", 1), ("apple", 2)]

    # the same insert delivered again (a connector restart replays it at a new offset) counts
    # once; then a new copy, and a copy of the changed row
    replayed = t.messages[2]
    first = len(t.messages)
    t.messages.append(replayed)
    t.insert(row)
    t.insert({"item": "apple", "qty": 2})
    lakehouse.ingest(_keyless_lines(t, first), fmt="debezium-json")
    lakehouse.build()
    assert copies() == [("apple", 1), ("apple", 1), ("apple", 2), ("apple", 2)]
    numbered = lakehouse.rows(
        "select pk, copy_number from gold.cdc_current_state where source_table = 'bag' order by pk, copy_number"
    )
    assert [r["copy_number"] for r in numbered] == [1, 2, 1, 2]

    # a truncate empties the table; what comes after it counts from nothing
    first = len(t.messages)
    t.messages.append((None, t._value("t", None, None)))
    t.insert(row)
    lakehouse.ingest(_keyless_lines(t, first), fmt="debezium-json")
    lakehouse.build()
    assert copies() == [("apple", 1)]


def test_a_keyless_message_delivered_again_counts_once(lakehouse):
    """AWS DMS names no position finer than a timestamp: the same insert delivered three times
    (at-least-once delivery) is one copy (SPEC rule 5); an insert at another time is another."""
    def dms(op: str, ts: str) -> str:
        return json.dumps({
            "data": {"item": "pear", "qty": 5},
            "metadata": {"timestamp": ts, "record-type": "data", "operation": op,
                         "partition-key-type": "schema-table", "schema-name": "shop", "table-name": "crate",
                         "transaction-id": 670014899490},
        })
    first, later = "2024-10-27T12:39:03.210671Z", "2024-10-27T12:40:00.000001Z"
    sent = [dms("insert", first)] * 3 + [dms("insert", later)] * 2
    lakehouse.ingest([envelope("dms.shop", 0, i, None, v) for i, v in enumerate(sent)], fmt="aws-dms-json")
    lakehouse.build()
    rows = lakehouse.rows("select copy_number from gold.cdc_current_state where source_table = 'crate'")
    assert sorted(r["copy_number"] for r in rows) == [1, 2]
