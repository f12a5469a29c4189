"""The benchmark's generator (bench/generate.py): its messages go through the pipeline unharmed.

A benchmark whose input the pipeline cannot read, or reads wrong, measures nothing. The
end-to-end test lands a small generated history of every format through the CLI, as
bench/run.py does, builds, and compares gold.cdc_current_state key by key and value by value
with the generator's own final state; the others check what makes the generator fit for
millions of changes (cost per change, determinism, Kafka coordinates).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT, CliLakehouse

sys.path.insert(0, str(PROJECT / "bench"))

import generate  # noqa: E402


def exact(text: str) -> Any:
    """JSON text decoded with every number kept as ("num", its exact text): 1.50 is not 1.5,
    and the number 7 is not the string "7"."""
    return json.loads(text, parse_float=lambda t: ("num", t), parse_int=lambda t: ("num", t))


def test_decimals_are_written_as_java_big_decimal_to_string_writes_them() -> None:
    # OMS writes DECIMAL with BigDecimal.toString(): scientific below an adjusted exponent of -6
    assert generate._big_decimal(0) == "0E-10"
    assert generate._big_decimal(1234) == "1.234E-7"
    assert generate._big_decimal(5) == "5E-10"
    assert generate._big_decimal(-12345) == "-0.0000012345"
    assert generate._big_decimal(10**22 - 1) == "999999999999.9999999999"
    assert generate._plain(-5) == "-0.0000000005"
    assert generate._plain(0) == "0.0000000000"


def test_generation_is_deterministic_and_continues_one_history(tmp_path: Path) -> None:
    def run(out: Path) -> dict[str, str]:
        source, offsets = generate.Source(tables=6, seed=3), {}
        generate.write_kcat(out, source.changes(1500), offsets)
        generate.write_kcat(out.with_name("more.jsonl"), source.changes(300), offsets)
        return {p.name: p.read_text(encoding="utf-8") for p in (out, out.with_name("more.jsonl"))}

    first, second = run(tmp_path / "a" / "c.jsonl"), run(tmp_path / "b" / "c.jsonl")
    assert first == second
    # one partition per topic, offsets 0, 1, 2, ... across the first file and the increment
    offsets: dict[str, list[int]] = {}
    for name in sorted(first, key=lambda n: n.startswith("more")):
        for line in first[name].splitlines():
            rec = json.loads(line)
            assert rec["partition"] == 0 and rec["topic"].startswith("bench.")
            offsets.setdefault(rec["topic"], []).append(rec["offset"])
    assert all(o == list(range(len(o))) for o in offsets.values())
    assert {t.split(".")[1] for t in offsets} == set(generate.FORMATS)


def test_the_standing_formats_write_the_same_bytes(tmp_path: Path) -> None:
    """The standing benchmark's figures compare runs over the same seed: its four formats' output
    (and the final state) must not move when formats are added. The digests are of the output
    before ALL_FORMATS existed; ``formats=FORMATS`` given or not is the same source."""
    for kwargs in ({}, {"formats": generate.FORMATS}):
        source, offsets = generate.Source(tables=8, seed=7, **kwargs), {}
        counts = generate.write_kcat(tmp_path / "a.jsonl", source.changes(3000), offsets)
        more = generate.write_kcat(tmp_path / "b.jsonl", source.changes(300), offsets, generate.FOLLOW_PREFIX)
        written = (tmp_path / "a.jsonl").read_bytes() + (tmp_path / "b.jsonl").read_bytes()
        assert hashlib.sha256(written).hexdigest() == (
            "6a0348449402a720d9b067e354ed24389742d99057c5c4b36f0ed107753d8675")
        assert counts == {"debezium-json": 860, "canal-json": 739, "maxwell-json": 772, "oms-json": 706}
        assert list(more) == list(generate.FORMATS)
        state = json.dumps(source.current_state(), sort_keys=True).encode()
        assert hashlib.sha256(state).hexdigest() == (
            "58aa1483019995b873b6b62568f4ba03f7fb3044137019716fc7d78f63d62d61")
    assert generate.topic_formats() == generate.topic_formats(generate.FORMATS)
    assert generate.build_vars() == generate.build_vars(generate.FORMATS)


def _messages_of(records: list[generate.Record], fmt: str) -> list[tuple[str | None, dict[str, Any] | None]]:
    return [(key, None if value is None else json.loads(value)) for f, _, key, value, _ in records if f == fmt]


def test_every_format_writes_its_vendors_quirks() -> None:
    """The message shapes that matter, per format: what each vendor leaves out or spells its
    own way (the end-to-end test below checks that the pipeline reads them right)."""
    source = generate.Source(tables=15, seed=3, formats=generate.ALL_FORMATS)
    assert [source.formats()[t.name] for t in source.tables] == list(generate.ALL_FORMATS)
    records = list(source.changes(3000))
    assert {f for f, *_ in records} == set(generate.ALL_FORMATS)
    # every topic is read with its own format: exactly one pattern of build_vars matches it
    patterns = json.loads(generate.build_vars(generate.ALL_FORMATS))["cdc_topic_formats"]
    for fmt, topic, *_ in records:
        for prefix in ("bench", generate.FOLLOW_PREFIX):
            name = prefix + topic[len("bench"):]
            assert [f for p, f in patterns.items() if re.search(p, name)] == [fmt], name

    dw = _messages_of(records, "dataworks")
    ops = [m["payload"]["op"] for _, m in dw]
    assert set(ops) == {"INSERT", "UPDATE_BEFOR", "UPDATE_AFTER", "DELETE"}
    for i, op in enumerate(ops):  # a split update: the two halves share the sequenceId
        if op == "UPDATE_BEFOR":
            half, other = dw[i][1]["payload"], dw[i + 1][1]["payload"]
            assert other["op"] == "UPDATE_AFTER" and other["sequenceId"] == half["sequenceId"]
            assert half["after"] is None and other["before"] is None
    assert all(isinstance(m["payload"]["after"]["dataColumn"]["balance"], str)
               for _, m in dw if m["payload"]["op"] == "INSERT")

    for fmt, deleted_in in (("drs-json", "old"), ("drs-json-c", "data")):
        msgs = [m for _, m in _messages_of(records, fmt)]
        deletes = [m for m in msgs if m["type"] == "DELETE"]
        assert deletes and all(m[deleted_in] for m in deletes)
        assert isinstance(msgs[0]["es"], str) == (fmt == "drs-json-c")
        assert [m["id"] for m in msgs] == sorted(m["id"] for m in msgs)  # DRS's monotonic sequence
    drs_lines = [v for f, _, _, v, _ in records if f.startswith("drs-json") and v]
    assert any("O\\u0027Brien" in v for v in drs_lines)  # Gson's HTML-safe escapes
    assert not any(char in v for v in drs_lines for char in "<>&='")

    cloudcanal = [m for _, m in _messages_of(records, "cloudcanal-json")]
    assert {m["action"] for m in cloudcanal} == {"INSERT", "UPDATE", "DELETE"}
    assert all((m["before"] != []) == (m["action"] == "UPDATE") for m in cloudcanal)

    canal_updates = [m for _, m in _messages_of(records, "canal-json") if m["type"] == "UPDATE"]
    assert all("id" not in m["old"][0] for m in canal_updates)  # old: only the changed columns

    smt = _messages_of(records, "debezium-smt")
    assert {m["__deleted"] for _, m in smt} == {"true", "false"}
    assert all(key == f'{{"id":{m["id"]}}}' for key, m in smt)

    flat = [m for _, m in _messages_of(records, "debezium-flat")]
    assert all(("before" in m) == (m["op"] != "c") and ("after" in m) == (m["op"] != "d") for m in flat)
    assert all("@" in m["source"]["pos"] for m in flat)

    sp = [v for f, _, _, v, _ in records if f == "shareplex-json"]
    assert all("\\u0001" in v for v in sp)  # rowid: {database}.{table}-{id}\u0001{region}
    updates = [json.loads(v) for v in sp if '"op":"upd"' in v]
    assert updates and all("id" not in m["data"] and set(m["key"]) >= {"id", "region", "balance", "name"}
                           for m in updates)  # data: only the changed columns, key: the row before

    avro = [m for _, m in _messages_of(records, "oms-avro-json")]
    assert all(len(m["fields"]) == len(m["afterImages"] or m["beforeImages"]) for m in avro)
    assert any(e is not None and "charset" in e for m in avro for e in m["afterImages"] or [])

    ogg = [m for _, m in _messages_of(records, "ogg-json")]
    assert all(m["table"] == m["table"].upper() and m["primary_keys"] == ["ID"] for m in ogg)
    assert any(m["op_type"] == "U" and "NAME" not in m["after"] for m in ogg)  # compressed update
    assert all(len(m["pos"]) == 20 for m in ogg)

    dms = [m for _, m in _messages_of(records, "aws-dms-json")]
    assert all(("before-image" in m) == (m["metadata"]["operation"] == "update") for m in dms)
    assert all(isinstance(m["data"]["balance"], str) and isinstance(m["data"]["id"], int) for m in dms)


def test_the_command_line_takes_the_formats(tmp_path: Path) -> None:
    out = tmp_path / "changes.jsonl"
    run = subprocess.run(
        [sys.executable, str(PROJECT / "bench" / "generate.py"), "--changes", "300", "--tables", "4",
         "--formats", "ogg-json,dataworks", "--out", str(out)],
        capture_output=True, text=True, check=True)
    assert "ogg-json" in run.stdout and "dataworks" in run.stdout and "debezium-json" not in run.stdout
    assert {json.loads(line)["topic"].split(".")[1] for line in out.read_text("utf-8").splitlines()} == {
        "ogg-json", "dataworks"}
    assert generate.parse_formats("all") == generate.ALL_FORMATS
    with pytest.raises(argparse.ArgumentTypeError):
        generate.parse_formats("debezium-json,nope")


def test_a_change_costs_the_same_however_large_the_table() -> None:
    # one table of ~20,000 live rows: a cost per change proportional to the live rows (the old
    # generator copied them on every update) takes minutes here, O(1) about a second
    source = generate.Source(tables=1, seed=5)
    started = time.monotonic()
    count = sum(1 for _ in source.changes(200_000))
    assert count >= 200_000
    assert sum(source.live_counts().values()) > 15_000
    assert time.monotonic() - started < 30


def test_generated_history_reaches_gold_exactly(tmp_path: Path) -> None:
    """A small history of every one of the 15 formats through one lakehouse, one build."""
    source = generate.Source(tables=30, seed=7, formats=generate.ALL_FORMATS)
    out = tmp_path / "changes.jsonl"
    counts = generate.write_kcat(out, source.changes(8000), {})
    assert list(counts) == list(generate.ALL_FORMATS) and all(counts.values())
    truth = source.current_state()
    values = [v for rows in truth.values() for v in rows.values()]
    # the cases exactness is about are in the final state, not only somewhere in the history
    assert any("E-" in v for v in values), "no OMS DECIMAL in scientific notation left"
    assert any('"balance":-' in v or '"balance":"-' in v or '"BALANCE":-' in v for v in values), \
        "no negative DECIMAL left"
    assert any(x in v for v in values for x in ("\\\\", '\\"', "\\n", "\\u0001", "北", "Zoë")), "no odd name left"
    records = out.read_text("utf-8").splitlines()
    assert any('"payload":null' in r for r in records), "no Debezium tombstone"
    for beat in ('\\"recordType\\":\\"HEARTBEAT', '\\"op\\":\\"MHEARTBEAT', '\\"op\\":\\"HEARTBEAT'):
        assert any(beat in r for r in records), f"no {beat} record (OMS, DataWorks, DataWorks 2.0)"

    lh = CliLakehouse(tmp_path / "lakehouse")
    # one dump of every topic, no --format: the build learns the formats from the topic names
    assert f"landed {sum(counts.values())}," in lh.run("ingest", "--from-file", str(out)).stdout
    lh.run("build", "--vars", generate.build_vars(generate.ALL_FORMATS))

    # one query (each `lakehouse sql` is a JVM start): gold's rows, and anything quarantined
    answer = lh.sql_json(
        "select 'gold' as kind, source_format, source_table, pk, row from gold.cdc_current_state"
        " union all select 'quarantine', source_format, kafka_topic, cast(kafka_offset as string), reason"
        " from silver.cdc_quarantine"
    )
    assert [r for r in answer if r["kind"] == "quarantine"] == []
    rows = [r for r in answer if r["kind"] == "gold"]
    live: dict[str, int] = {}
    for r in rows:
        live[r["source_table"]] = live.get(r["source_table"], 0) + 1
    assert live == source.live_counts()

    formats = source.formats()
    got: dict[tuple[str, str], Any] = {}
    for r in rows:
        assert r["source_format"] == formats[r["source_table"]]
        # the key's values as text (a number as its digits), as Source.current_state writes them
        pk = json.loads(r["pk"], parse_int=str, parse_float=str)
        got[(r["source_table"], json.dumps(pk, sort_keys=True))] = exact(r["row"])
    want = {(table, pk): exact(row) for table, rows in truth.items() for pk, row in rows.items()}
    assert got.keys() == want.keys()
    wrong = {k: (want[k], got[k]) for k in want if got[k] != want[k]}
    assert not wrong, f"{len(wrong)} rows differ, e.g. {list(wrong.items())[:3]}"


def test_the_per_node_table_takes_only_the_builds_own_models(tmp_path: Path) -> None:
    """The table of seconds per dbt node reads the run_results.json dbt leaves: one the build did
    not write (older than the build) or one of the data tests' run would put another run's
    nodes under the build, so either gives nothing."""
    import run  # bench/run.py

    target = tmp_path / "target"
    target.mkdir()
    results = target / "run_results.json"
    results.write_text(json.dumps({"results": [
        {"unique_id": "model.cdc_lakehouse.cdc_history", "execution_time": 8.74},
        {"unique_id": "seed.cdc_lakehouse.cdc_op_codes", "execution_time": 0.21},
        {"unique_id": "test.cdc_lakehouse.unique_cdc_parsed_record_id.e169f821ac", "execution_time": 3.1},
    ]}), encoding="utf-8")
    written = results.stat().st_mtime
    assert run.model_seconds(str(target), since=written - 1) == {"cdc_history": 8.7, "cdc_op_codes": 0.2}
    assert run.model_seconds(str(target), since=written + 60) == {}
    results.write_text(json.dumps({"results": [
        {"unique_id": "test.cdc_lakehouse.unique_cdc_parsed_record_id.e169f821ac", "execution_time": 3.1},
    ]}), encoding="utf-8")
    assert run.model_seconds(str(target)) == {}


def test_the_figures_come_with_the_machine_and_its_yardstick() -> None:
    """Hosts of one size can differ widely in speed between sessions: the summary names the
    processor and times a fixed loop, and the printed table says both above the figures, so two
    runs' figures can be told apart by their machines' speed."""
    import run  # bench/run.py

    short, longer = run.yardstick_seconds(rounds=2, loop=100_000), run.yardstick_seconds(rounds=2, loop=2_000_000)
    assert 0 < short < longer
    host = run.machine()
    assert host["yardstick_s"] > 0 and host["cpu_model"] != "?" and host["cpu_mhz"] > 0
    result = {"changes": 1000, "records": 1010, "problems": [],
              "live_rows_gold": 9, "live_rows_floor": 9, "live_rows_expected": 9}
    printed = run.table([result], {"machine": host})
    first, rest = printed.split("\n", 1)
    assert first.startswith(f"machine: {host['cpus']} x {host['cpu_model']} at ")
    assert f"yardstick (a fixed Python loop, fastest of 3): {host['yardstick_s']:.2f} s" in first
    assert "| measure | 1,000 |" in rest
    assert run.table([result], {}).startswith("| measure | 1,000 |")


def test_the_producer_keeps_librdkafka_quiet_unless_the_produce_fails(tmp_path: Path, capfd: Any) -> None:
    """librdkafka prints its warnings on stderr (a broker that has just started answers the
    bench's first produce with "Coordinator load in progress", then serves it), amid the bench's
    progress. The bench keeps them, and names them in the error when the produce fails: here
    against a port nothing listens on, where librdkafka reports each refused connection."""
    import run  # bench/run.py
    from confluent_kafka import KafkaException
    from lakehouse.ports import free_port

    dump = tmp_path / "dump.jsonl"
    generate.write_kcat(dump, generate.Source(2, seed=3).changes(5), {})
    with pytest.raises(KafkaException) as raised:
        run.produce(dump, f"127.0.0.1:{free_port()}", create=False, flush_s=3)
    failure = str(raised.value)
    assert "still queued after 3 s" in failure, failure
    assert "Connection refused" in failure, failure
    assert "rdkafka" not in capfd.readouterr().err
