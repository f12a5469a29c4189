"""Bad input never blocks gold and is never rewritten (issue 81, points 1-4).

What a user sees is in docs/operations-bad-input.md: records at a landed (topic, partition,
offset) with other bytes are conflicts, kept apart and failing the ingest unless accepted;
bytes that are not UTF-8 land as they are and are quarantined; a line that is not a usable
kcat envelope (not JSON, a coordinate missing, negative or out of range) is quarantined with
what it is, and gold builds on; commands pointed at a folder without a lakehouse leave it empty.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cdc_messages import DebeziumTable, envelope
from conftest import BIN, PROJECT, InProcessLakehouse
from lakehouse import bronze, cli, file_source


def _envelope(topic: str, offset: int, payload: str, partition: int = 0, key: str | None = None) -> str:
    return json.dumps({"topic": topic, "partition": partition, "offset": offset, "ts": 1_700_000_000_000 + offset,
                       "key": key, "payload": payload})


def _write(lh: InProcessLakehouse, name: str, lines: list[str] | bytes) -> Path:
    path = lh.root / name
    data = lines if isinstance(lines, bytes) else "".join(line + "\n" for line in lines).encode("utf-8")
    path.write_bytes(data)
    return path


def _ingest(lh: InProcessLakehouse, path: Path, *extra: str) -> int:
    return cli.main(["ingest", "--from-file", str(path), *extra])


# --------------------------------------------------------------------------- point 3: conflicts


def test_other_bytes_at_a_landed_offset_are_conflicts_kept_apart(
    lakehouse: InProcessLakehouse, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _write(lakehouse, "first.jsonl", [_envelope("c", o, f"v{o}") for o in range(5)])
    assert _ingest(lakehouse, first) == 0
    capsys.readouterr()
    # offset 3 again with other bytes, 4 again alike, 5 and 6 new; 10 twice with two payloads
    again = _write(lakehouse, "again.jsonl", [
        _envelope("c", 3, "other"), _envelope("c", 4, "v4"), _envelope("c", 5, "v5"), _envelope("c", 6, "v6"),
        _envelope("c", 10, "first copy"), _envelope("c", 10, "second copy"),
    ])  # fmt: skip
    assert _ingest(lakehouse, again) == 1
    out = capsys.readouterr()
    assert "read 6, landed 3, skipped 1 as already landed, conflicting 2 (kept in bronze.kafka_conflicts)" in out.out
    assert "--accept-conflicts" in out.err and "bronze.kafka_conflicts" in out.err
    held = lakehouse.rows("select offset, cast(value as string) as v from bronze.kafka_records "
                          "where topic = 'c' order by offset")  # fmt: skip
    assert [r["offset"] for r in held] == [0, 1, 2, 3, 4, 5, 6, 10]
    assert held[3]["v"] == "v3"  # bronze keeps the version it holds
    conflicts = lakehouse.rows(
        "select offset, cast(landed_value as string) as landed, cast(offered_value as string) as offered, "
        "landed_source, offered_source from bronze.kafka_conflicts order by offset"
    )
    assert [(r["offset"], r["landed"]) for r in conflicts] == [(3, "v3"), (10, held[7]["v"])]
    assert conflicts[0]["offered"] == "other"
    assert {conflicts[1]["landed"], conflicts[1]["offered"]} == {"first copy", "second copy"}
    assert conflicts[0]["landed_source"] == f"file:{first}" and conflicts[0]["offered_source"] == f"file:{again}"
    # accepted: exit 0, the same report; a plain replay is no conflict and adds no row
    assert _ingest(lakehouse, again, "--accept-conflicts") == 0
    assert "conflicting 2" in capsys.readouterr().out
    assert _ingest(lakehouse, first) == 0
    assert "conflicting" not in capsys.readouterr().out
    assert lakehouse.rows("select count(*) as n from bronze.kafka_conflicts") == [{"n": 4}]


def test_a_batch_of_new_offsets_compares_nothing(lakehouse: InProcessLakehouse) -> None:
    path = _write(lakehouse, "new.jsonl", [_envelope("n", o, "x") for o in range(3)])
    dump = file_source.read_dump(lakehouse.spark, str(path))
    bronze.ensure_bronze(lakehouse.spark)
    result = bronze.land(lakehouse.spark, dump.records, fmt=None, source="file", ranges=dump.ranges)
    assert (result.read, result.landed, result.conflicting) == (3, 3, 0)
    assert not lakehouse.spark.catalog.tableExists(bronze.CONFLICTS_TABLE)


# --------------------------------------------------------------------------- points 1, 2, 4 and names, in one build

#: The bytes of issue 81: not UTF-8 (a lone 0xff 0xfe, then 0xc3 not followed by a continuation byte).
NOT_UTF8 = b"\xff\xfe\xc3\x28"

#: Names with quotes, backticks, semicolons and SQL in them: kept verbatim, executing nothing.
ODD_DATABASE = "we`ird'; drop table gold.cdc_current_state; --"
ODD_TABLE = 'it"s `t`; select 1'
ODD_COLUMN = "col`;'\" or 1=1"


def _line(topic: str, offset: int, key: str | None, payload: str | None, partition: object = 0) -> bytes:
    return (envelope(topic, 0, offset, key, payload).replace('"partition": 0', f'"partition": {json.dumps(partition)}')
            + "\n").encode("utf-8")  # fmt: skip


def test_bad_lines_are_quarantined_with_what_they_are_and_gold_builds(
    lakehouse: InProcessLakehouse, capsys: pytest.CaptureFixture[str]
) -> None:
    shop = DebeziumTable("srv", "shop", "items", ["id"])
    for i in (1, 2, 3):
        shop.insert({"id": i, "name": f"item {i}"})
    shop.update({"id": 2, "name": "item 2"}, {"id": 2, "name": "item two"})
    odd = DebeziumTable("srv", ODD_DATABASE, ODD_TABLE, ["id"])
    big = "x" * (5 * 1024 * 1024)
    odd.insert({"id": 1, ODD_COLUMN: big})
    good = b"".join(line.encode("utf-8") + b"\n" for line in shop.envelopes() + odd.envelopes())
    key7, value7 = shop.insert({"id": 7, "name": "PLACEHOLDER"})
    key8, value8 = shop.insert({"id": 8, "name": "eight"})
    key9, value9 = shop.insert({"id": 9, "name": "nine"})
    not_utf8_value = _line(shop.topic, 10, key7, value7).replace(b"PLACEHOLDER", NOT_UTF8)
    not_utf8_key = _line(shop.topic, 11, key8, value8).replace(b'\\"id\\": 8', b'\\"id\\": 8' + NOT_UTF8, 1)
    assert NOT_UTF8 in not_utf8_value and NOT_UTF8 in not_utf8_key
    bad = [
        _line(shop.topic, 12, key9, value9, partition=-1),  # a valid payload at partition -1 (issue 81)
        _line(shop.topic, 13, key9, value9, partition=2**31),
        _line(shop.topic, 14, key9, value9).replace(b'"offset": 14', b'"offset": "x"'),
        _line(shop.topic, 15, key9, value9).replace(b'"offset": 15, ', b""),
        b"garbage that is not JSON\n",
        b"[1, 2]\n",
    ]
    path = _write(lakehouse, "mixed.jsonl", good + not_utf8_value + not_utf8_key + b"".join(bad))
    assert _ingest(lakehouse, path, "--format", "debezium-json") == 0
    err = capsys.readouterr().err
    assert "6 line(s) are not kcat -J envelopes" in err
    assert f"not a kcat -C -J envelope (partition -1 is not an integer from 0 to 2147483647) at line 8 of {path}" in err

    # bronze holds the bytes as they were, the unrouted lines too
    held = {(r["topic"], r["offset"]): r for r in lakehouse.rows(
        "select topic, offset, key, value, length(value) as size from bronze.kafka_records")}  # fmt: skip
    assert NOT_UTF8 in bytes(held[(shop.topic, 10)]["value"]) and NOT_UTF8 in bytes(held[(shop.topic, 11)]["key"])
    assert bytes(held[(file_source.UNROUTED_TOPIC, 11)]["value"]) == bad[4].rstrip(b"\n")
    assert held[(odd.topic, 0)]["size"] > len(big)

    lakehouse.build()  # with the data tests: none fails, gold is built
    reasons = {(r["kafka_topic"], r["kafka_offset"]): r["reason"] for r in lakehouse.rows(
        "select kafka_topic, kafka_offset, reason from silver.cdc_quarantine")}  # fmt: skip
    unrouted = {offset: reason for (topic, offset), reason in reasons.items() if topic == file_source.UNROUTED_TOPIC}
    assert reasons[(shop.topic, 10)] == "value is not valid UTF-8"
    assert reasons[(shop.topic, 11)] == "key is not valid UTF-8"
    expected = [
        "partition -1 is not an integer from 0 to 2147483647",
        f"partition {2**31} is not an integer from 0 to 2147483647",
        "offset x is not an integer from 0 to 9223372036854775807",
        "an envelope without offset",
        "not JSON",
        "a JSON array, not an envelope object",
    ]
    assert unrouted == {
        7 + i: f"not a kcat -C -J envelope ({what}) at line {8 + i} of {path}" for i, what in enumerate(expected)
    }
    state = lakehouse.current_state()
    assert sorted(pk for (table, pk) in state if table == "items") == ['{"id":1}', '{"id":2}', '{"id":3}']
    assert state[("items", '{"id":2}')]["name"] == "item two"
    # names verbatim, the 5 MB value whole
    odd_rows = lakehouse.rows(
        "select source_database, source_table, row from gold.cdc_current_state where source_table <> 'items'"
    )
    assert [(r["source_database"], r["source_table"]) for r in odd_rows] == [(ODD_DATABASE, ODD_TABLE)]
    assert json.loads(odd_rows[0]["row"])[ODD_COLUMN] == big
    assert lakehouse.spark.catalog.tableExists("gold.cdc_current_state")


def test_a_bronze_record_with_invalid_coordinates_is_quarantined_not_ordered(lakehouse: InProcessLakehouse) -> None:
    """A record landed before the loader refused such lines (or written into bronze by other
    means) at partition -1 is quarantined with that reason: it never reaches the strict-order
    data test, which would stop every gold model on every build."""
    from pyspark.sql import functions as F

    shop = DebeziumTable("srv", "shop", "items", ["id"])
    shop.insert({"id": 1, "name": "one"})
    shop.insert({"id": 2, "name": "two"})
    assert _ingest(lakehouse, _write(lakehouse, "good.jsonl", shop.envelopes()), "--format", "debezium-json") == 0
    landed = lakehouse.spark.table("bronze.kafka_records")
    (landed.where("offset = 1").withColumn("partition", F.lit(-1)).withColumn("offset", F.lit(7).cast("bigint"))
        .write.format("delta").mode("append").saveAsTable("bronze.kafka_records"))  # fmt: skip
    lakehouse.build()  # with the data tests: the strict order holds, gold is built
    quarantined = lakehouse.rows("select kafka_partition, kafka_offset, reason from silver.cdc_quarantine")
    assert quarantined == [{"kafka_partition": -1, "kafka_offset": 7, "reason": (
        "invalid Kafka coordinates: partition -1, offset 7 (both must be integers from 0)")}]
    assert sorted(pk for (_, pk) in lakehouse.current_state("items")) == ['{"id":1}', '{"id":2}']


# --------------------------------------------------------------------------- point 4: the wrong folder


def _command(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "lakehouse"), *args], env=dict(os.environ, LAKEHOUSE_DIR=str(root)),
                          cwd=PROJECT, capture_output=True, text=True, timeout=600)  # fmt: skip


def test_sql_and_build_on_a_folder_without_a_lakehouse_leave_nothing_behind(tmp_path: Path) -> None:
    missing = tmp_path / "not-there"
    query = _command(missing, "sql", "select * from gold.cdc_current_state")
    assert query.returncode == 1 and "holds no lakehouse" in query.stderr, query.stderr[-2000:]
    assert not missing.exists()
    answered = _command(tmp_path, "sql", "select 1 as one")
    assert answered.returncode == 0 and "one" in answered.stdout
    build = _command(tmp_path, "build")
    assert build.returncode != 0 and "nothing has been landed in it yet" in build.stdout + build.stderr
    assert list(tmp_path.iterdir()) == []  # no metastore_db, derby.log or empty schemas
