"""Debezium messages through bronze, silver and gold, in-process, against the true final state."""

from __future__ import annotations

import json

import pytest
from cdc_messages import DebeziumTable, Raw, envelope
from conftest import DBT_TARGET
from scenarios import debezium_history, hard_delivery


def _decoded(state: dict) -> dict:
    return {pk: {c: str(v) for c, v in row.items()} for (_, pk), row in state.items()}


def test_hard_delivery_gives_the_true_final_state(lakehouse):
    dbz, truth = debezium_history(seed=7)
    batches = hard_delivery(dbz, seed=7)
    for i, batch in enumerate(batches):
        lakehouse.ingest(batch, fmt="debezium-json")
        lakehouse.build(tests=i == len(batches) - 1)
    assert _decoded(lakehouse.current_state("accounts")) == truth

    # the accounting identity of SPEC rule 8, checked here from outside dbt as well
    bronze = lakehouse.rows("select count(*) as n from bronze.kafka_records")[0]["n"]
    kinds = lakehouse.rows(
        "select count(distinct kafka_topic, kafka_partition, kafka_offset) as n, "
        "count(distinct record_kind) as k from silver.cdc_parsed "
        "group by kafka_topic, kafka_partition, kafka_offset having k > 1"
    )
    parsed = lakehouse.rows(
        "select count(distinct kafka_topic, kafka_partition, kafka_offset) as n from silver.cdc_parsed"
    )[0]["n"]
    assert kinds == [] and parsed == bronze


@pytest.mark.parametrize("jvm_functions", [True, False], ids=["jvm-marking", "regex-marking"])
def test_exact_values_deletes_key_changes_and_control_events(lakehouse, jvm_functions):
    """Both ways of marking exact numbers (macros/utils/cdc_json.sql) give the same gold.

    The fast parsers are off: they read the common message without marking, and the SQL
    parser, which marks, would only see the two bad messages (in silver's post-hook)."""
    t = DebeziumTable("dbserver1", "inventory", "items", ["id"], with_schema=True)
    a = {"id": Raw("10223372036854775806"), "price": Raw("9.999999999999999093266253"),
         "name": "a \u003d \"quoted\" \U0001F600 \u4e2d", "nul": "\u0000"}
    b = {"id": 2, "price": Raw("1.5"), "name": "b"}
    t.insert(a)
    t.insert(b)
    t.update(b, {**b, "id": 3})  # key change: 2 disappears, 3 appears
    t.delete(a)  # delete + tombstone
    t.insert({**a, "price": Raw("12345678901234567890123456789012345678901234567890.123456789012345")})
    lines = t.envelopes()
    lines.append(envelope(t.topic, 0, len(lines), None, "{not json"))
    lines.append(envelope(t.topic, 0, len(lines), None, '{"payload": {"op": "x", "source": {}}}'))
    lakehouse.ingest(lines, fmt="debezium-json")
    lakehouse.build("--vars", json.dumps({"cdc_jvm_functions": jvm_functions, "cdc_fast_parsers": False}))
    compiled = (DBT_TARGET / "compiled/cdc_lakehouse/models/silver/cdc_parsed.sql").read_text()
    assert ("cdc_lakehouse.json.mark(" in compiled) == jvm_functions

    state = lakehouse.rows("select pk, row, last_op from gold.cdc_current_state order by pk")
    assert [r["pk"] for r in state] == ['{"id":10223372036854775806}', '{"id":3}']
    row = json.loads(state[0]["row"], parse_float=str, parse_int=str)
    assert row == {"id": "10223372036854775806",
                   "price": "12345678901234567890123456789012345678901234567890.123456789012345",
                   "name": "a = \"quoted\" \U0001F600 \u4e2d", "nul": "\u0000"}
    assert state[0]["last_op"] == "c"

    control = lakehouse.rows("select control_kind, count(*) as n from silver.cdc_control_events group by 1")
    assert control == [{"control_kind": "tombstone", "n": 1}]
    reasons = sorted(r["reason"] for r in lakehouse.rows("select reason from silver.cdc_quarantine"))
    assert reasons == ["invalid JSON", 'unknown op "x" for format debezium-json']


def test_late_older_change_does_not_revive_a_deleted_row(lakehouse):
    t = DebeziumTable("dbserver1", "inventory", "late", ["id"])
    row = {"id": 1, "v": "first"}
    ins = t.insert(row)
    upd = t.update(row, {**row, "v": "second"})
    dele = t.delete({**row, "v": "second"}, tombstone=False)[0]
    lakehouse.ingest(t.envelopes([ins, dele], first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    assert lakehouse.current_state("late") == {}
    # the update is older than the delete but arrives later, at a later offset
    lakehouse.ingest(t.envelopes([upd], first_offset=2), fmt="debezium-json")
    lakehouse.build()
    assert lakehouse.current_state("late") == {}
    assert lakehouse.rows("select count(*) as n from silver.cdc_changes where source_table = 'late'") == [{"n": 3}]
