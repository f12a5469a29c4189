"""Bad input never blocks gold and is never rewritten (issue 81, points 1-4).

What a user sees is in docs/operations-bad-input.md: records at a landed (topic, partition,
offset) with other bytes are conflicts, kept apart and failing the ingest unless accepted;
bytes that are not UTF-8 land as they are and are quarantined; a line that is not a usable
kcat envelope (not JSON, a coordinate missing, negative or out of range) is quarantined with
what it is, and gold builds on; commands pointed at a folder without a lakehouse leave it empty.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import InProcessLakehouse
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
