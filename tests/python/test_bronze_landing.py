"""Landing in bronze: exact line numbers on the JVM, offset-range pruning, repeats, re-ingest.

``lakehouse ingest --from-file`` numbers lines without Python (Spark row ids per split) and
MERGEs with a filter on the batch's offset ranges so that Delta skips the bronze files that
cannot hold them. These tests pin down that neither changes what lands: line numbers stay those
of the file across many splits, a record missing from bronze is always landed, one already there
never twice, and offsets repeated inside a batch land once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import InProcessLakehouse
from lakehouse import bronze, file_source
from lakehouse.cli import build_parser
from lakehouse.kafka_loader.offsets import planned_ranges
from lakehouse.kafka_loader.options import CONSUMER_DEFAULTS, client_options, source_options


def _envelope(topic: str, offset: int, partition: int = 0, payload: str | None = None) -> str:
    return json.dumps({"topic": topic, "partition": partition, "offset": offset, "ts": 1_700_000_000_000 + offset,
                       "key": f"k{offset}", "payload": payload if payload is not None else f"v{offset}"})


@contextmanager
def _small_splits(lh: InProcessLakehouse, size: str = "16k") -> Iterator[None]:
    """Spark reads files in splits of ``size`` bytes, so a small file spans many splits."""
    key = "spark.sql.files.maxPartitionBytes"
    before = lh.spark.conf.get(key)
    lh.spark.conf.set(key, size)
    try:
        yield
    finally:
        lh.spark.conf.set(key, before)


def _bronze(lh: InProcessLakehouse, topic: str) -> list[dict]:
    return lh.rows(
        "select partition, offset, cast(value as string) as value, batch_id, ingested_at "
        f"from bronze.kafka_records where topic = '{topic}' order by partition, offset"
    )


def _land(lh: InProcessLakehouse, name: str, lines: list[str], topic: str | None = None) -> bronze.LandResult:
    """Land ``lines`` written to a file as ``lakehouse ingest --from-file`` does."""
    path = lh.root / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    bronze.ensure_bronze(lh.spark)
    first = file_source.next_offset(lh.spark, bronze.TABLE, topic) if topic else 0
    dump = file_source.read_dump(lh.spark, str(path), topic, first)
    return bronze.land(lh.spark, dump.records, fmt=None, source=f"file:{path}", ranges=dump.ranges)


def test_non_envelope_lines_keep_their_line_numbers_across_many_splits(lakehouse: InProcessLakehouse) -> None:
    lines = []
    for i in range(6000):
        if i % 997 == 13:
            lines.append(f"garbage line {i} that is not an envelope")
        elif i % 1499 == 7:
            lines.append("   ")  # blank: numbered, never landed
        else:
            lines.append(_envelope("numbered", i, payload="x" * 40))
    expected = {i: line for i, line in enumerate(lines) if line.startswith("garbage")}
    with _small_splits(lakehouse):
        path = lakehouse.root / "numbered.jsonl"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        assert len(file_source._split_lines(file_source._lines(lakehouse.spark, str(path)))) > 5
        result = _land(lakehouse, "numbered.jsonl", lines)
    blank = sum(1 for line in lines if not line.strip())
    assert blank == 4 and len(expected) == 7
    assert result.read == result.landed == len(lines) - blank
    unrouted = _bronze(lakehouse, file_source.UNROUTED_TOPIC)
    assert {r["offset"]: r["value"] for r in unrouted} == expected
    assert [r["offset"] for r in _bronze(lakehouse, "numbered")] == [
        i for i, line in enumerate(lines) if line.startswith("{")
    ]
    again = _land(lakehouse, "numbered.jsonl", lines)
    assert (again.read, again.landed) == (result.read, 0)


def test_bare_values_are_numbered_contiguously_across_splits(lakehouse: InProcessLakehouse) -> None:
    values = [f"value {i} " + "y" * 30 for i in range(3000)]
    values[1234] = ""  # a blank line keeps its number, so later values keep theirs
    with _small_splits(lakehouse):
        first = _land(lakehouse, "bare1.txt", values, topic="bare")
        second = _land(lakehouse, "bare2.txt", values[:10], topic="bare")
    assert (first.read, first.landed, second.landed) == (2999, 2999, 10)
    rows = _bronze(lakehouse, "bare")
    assert [(r["offset"], r["value"]) for r in rows[:2999]] == [(i, v) for i, v in enumerate(values) if v]
    assert [(r["offset"], r["value"]) for r in rows[2999:]] == [(3000 + i, v) for i, v in enumerate(values[:10])]
    assert len({r["ingested_at"] for r in rows[:2999]}) == 1


def test_pruned_merge_lands_every_missing_offset_and_nothing_twice(lakehouse: InProcessLakehouse) -> None:
    # Three batches in three sets of files; the fourth overlaps all of them and fills gaps.
    _land(lakehouse, "a.jsonl", [_envelope("t", o) for o in range(0, 100)] + [_envelope("u", o) for o in range(50)])
    _land(lakehouse, "b.jsonl", [_envelope("t", o) for o in range(150, 200)])
    _land(lakehouse, "c.jsonl", [_envelope("t", o, partition=1) for o in range(0, 300, 3)])
    wanted = (
        [_envelope("t", o) for o in range(90, 210)]  # 90..99 and 150..199 are there, 100..149 and 200..209 not
        + [_envelope("t", o, partition=1) for o in range(0, 300)]  # two of every three missing
        + [_envelope("u", o) for o in range(45, 55)]
        + [_envelope("new", o) for o in range(5)]
    )
    result = _land(lakehouse, "d.jsonl", wanted)
    assert result.read == len(wanted)
    assert result.landed == 50 + 10 + 200 + 5 + 5
    rows = _bronze(lakehouse, "t")
    keys = [(r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys))
    assert keys == [(0, o) for o in range(0, 210)] + [(1, o) for o in range(300)]
    assert [r["offset"] for r in _bronze(lakehouse, "u")] == list(range(55))
    # Re-landing everything, whichever file, adds nothing.
    for name in ("a.jsonl", "d.jsonl"):
        lines = (lakehouse.root / name).read_text().splitlines()
        assert _land(lakehouse, name, lines).landed == 0


def test_merge_reads_only_the_files_that_can_hold_the_batch(lakehouse: InProcessLakehouse) -> None:
    for batch in range(4):
        _land(lakehouse, f"p{batch}.jsonl", [_envelope("p", batch * 100 + o) for o in range(100)])
    # The files of the first three batches (offsets 0..299) cannot hold offsets 395..409: with
    # them gone from disk, a MERGE that still read them would fail.
    old = lakehouse.rows(
        f"select distinct input_file_name() as f from {bronze.TABLE} where topic = 'p' and offset < 300"
    )
    assert old
    for row in old:
        Path(row["f"].removeprefix("file:")).unlink()
    result = _land(lakehouse, "p-late.jsonl", [_envelope("p", o) for o in range(395, 410)])
    assert (result.read, result.landed) == (15, 10)
    offsets = lakehouse.rows(f"select offset from {bronze.TABLE} where topic = 'p' and offset >= 300 order by 1")
    assert [r["offset"] for r in offsets] == list(range(300, 410))


def test_offsets_repeated_in_a_batch_land_once(lakehouse: InProcessLakehouse) -> None:
    # Offsets far apart fall in different bitmap blocks (32768 offsets each); repeats in any.
    offsets = [0, 1, 32767, 32768, 32769, 70000, 1, 70000]
    lines = [_envelope("rep", o, payload=f"copy-{i}") for i, o in enumerate(offsets)]
    result = _land(lakehouse, "rep.jsonl", lines)
    assert (result.read, result.landed) == (8, 6)
    assert [r["offset"] for r in _bronze(lakehouse, "rep")] == sorted(set(offsets))
    ranges = bronze.offset_ranges(lakehouse.spark.createDataFrame(
        [("a", 0, o) for o in (0, 32768, 32769, 70000)] + [("b", 2, 5)], "topic string, partition int, offset bigint"))
    assert ranges == [bronze.OffsetRange("a", 0, 0, 70000, 4), bronze.OffsetRange("b", 2, 5, 5, 1)]


def _jobs_of(lh: InProcessLakehouse, sql: str) -> int:
    """The Spark jobs that running ``sql`` took."""
    context = lh.spark.sparkContext
    group = f"jobs-of-{uuid.uuid4().hex}"
    context.setJobGroup(group, sql)
    try:
        lh.spark.sql(sql).collect()
    finally:
        context._jsc.clearJobGroup()  # noqa: SLF001 - pyspark has no call to clear it
    return len(context.statusTracker().getJobIdsForGroup(group))


def test_reading_ahead_leaves_the_next_query_no_snapshot_to_read(lakehouse: InProcessLakehouse) -> None:
    """``bronze.read_ahead``, which a following loader runs between a batch and its next build:
    the first query over bronze after a landing then takes the jobs that the same query takes
    again, not the new snapshot's on top (which, without it, the first one pays)."""
    query = (f"select count(*) from {bronze.TABLE} where topic = 'ahead' "
             "and ingested_at > current_timestamp() - interval 1 day")  # fmt: skip
    _land(lakehouse, "ahead-0.jsonl", [_envelope("ahead", o) for o in range(50)])
    first, again = _jobs_of(lakehouse, query), _jobs_of(lakehouse, query)
    assert first > again, (first, again)
    _land(lakehouse, "ahead-1.jsonl", [_envelope("ahead", o) for o in range(50, 120)])
    bronze.read_ahead(lakehouse.spark)
    assert _jobs_of(lakehouse, query) == again
    assert lakehouse.rows(query)[0]["count(1)"] == 120


def _history(lh: InProcessLakehouse) -> list[dict]:
    rows = lh.spark.sql(f"describe history {bronze.TABLE}").orderBy("version").collect()
    return [{"operation": r["operation"], "batch": bronze.batch_of(r["userMetadata"])} for r in rows]


def test_batches_of_new_offsets_are_appended_and_overlapping_ones_merged(lakehouse: InProcessLakehouse) -> None:
    first = _land(lakehouse, "first.jsonl", [_envelope("a", o) for o in range(20)] + [_envelope("a", 3)])
    assert (first.read, first.landed) == (21, 20)  # the repeated offset lands once
    # the next offsets of the topic, another partition and another topic: nothing to skip
    following = _land(lakehouse, "following.jsonl", [_envelope("a", o) for o in range(20, 30)]
                      + [_envelope("a", o, partition=1) for o in range(5)] + [_envelope("b", 0)])
    assert (following.read, following.landed) == (16, 16)
    again = _land(lakehouse, "again.jsonl", [_envelope("a", o) for o in range(25, 35)])
    assert (again.read, again.landed) == (10, 5)
    assert [r["offset"] for r in _bronze(lakehouse, "a") if r["partition"] == 0] == list(range(35))
    last = [(h["operation"], h["batch"]) for h in _history(lakehouse)[-3:]]
    assert last == [("WRITE", first.batch_id), ("WRITE", following.batch_id), ("MERGE", again.batch_id)]


def test_each_commit_names_its_batch_topics_format_and_ingest_time(lakehouse: InProcessLakehouse) -> None:
    # what a build routes the batch's records by, without reading them (cdc_landed_batches)
    first = _land(lakehouse, "named.jsonl", [_envelope("n.b", 0), _envelope("n.a", 0), _envelope("n.b", 1)])
    again = _land(lakehouse, "named-again.jsonl", [_envelope("n.c", 0), _envelope("n.a", 0)])
    history = lakehouse.spark.sql(f"describe history {bronze.TABLE} limit 2").orderBy("version").collect()
    for result, commit, topics in ((first, history[0], ["n.a", "n.b"]), (again, history[1], ["n.a", "n.c"])):
        batch = json.loads(commit["userMetadata"])["cdc_lakehouse_batch"]
        assert (batch["id"], batch["format"], batch["topics"]) == (result.batch_id, None, topics)
        stamps = lakehouse.rows(
            f"select count(*) as n, max(ingested_at) = timestamp '{batch['ingested_at']}' as same, "
            f"cast(max(ingested_at) as string) as text from {bronze.TABLE} where batch_id = '{result.batch_id}'"
        )
        assert stamps == [{"n": 3 if result is first else 1, "same": True, "text": batch["ingested_at"]}]
    assert bronze.batch_of(history[1]["userMetadata"]) == again.batch_id
    assert bronze.batch_of(again.batch_id) is None  # an earlier loader's metadata: the bare id


@pytest.mark.parametrize(("micros", "text"), [
    (680_000, "2026-11-28 00:38:24.68"), (0, "2026-11-28 00:38:24"), (2_000, "2026-11-28 00:38:24.002"),
    (500_000, "2026-11-28 00:38:24.5"),
])
def test_a_commits_stamp_reads_as_spark_prints_it(micros: int, text: str) -> None:
    # the watermark a build records from the log must read as the one it records by a query
    stamp = datetime(2026, 11, 28, 1, 38, 24, micros, tzinfo=timezone(timedelta(hours=1)))
    batch = json.loads(bronze.commit_metadata("b", "debezium-json", ["t"], stamp))["cdc_lakehouse_batch"]
    assert batch["ingested_at"] == text


@pytest.mark.parametrize("landed_before", [0, 5], ids=["empty", "holding-other-offsets"])
def test_a_commit_beside_an_append_makes_it_a_merge(
    lakehouse: InProcessLakehouse, monkeypatch: pytest.MonkeyPatch, landed_before: int
) -> None:
    # Another loader commits offsets 105..114 after this land's transaction found none of
    # 100..109 in bronze: Delta refuses the append, and the MERGE that follows lands only what
    # is missing. Into empty bronze the other loader appends; beside offsets 0..4 it MERGEs
    # (its batch repeats them).
    if landed_before:
        _land(lakehouse, "before.jsonl", [_envelope("c", o) for o in range(landed_before)])
    start = bronze._new_offsets_transaction

    def beside(spark, ranges):  # noqa: ANN001, ANN202 - the patched function's own signature
        txn = start(spark, ranges)
        assert txn is not None
        monkeypatch.setattr(bronze, "_new_offsets_transaction", start)
        _land(lakehouse, "beside.jsonl", [_envelope("c", o) for o in [*range(landed_before), *range(105, 115)]])
        return txn

    monkeypatch.setattr(bronze, "_new_offsets_transaction", beside)
    result = _land(lakehouse, "mine.jsonl", [_envelope("c", o) for o in range(100, 110)])
    assert (result.read, result.landed) == (10, 5)
    assert [r["offset"] for r in _bronze(lakehouse, "c")] == [*range(landed_before), *range(100, 115)]
    beside_write = "MERGE" if landed_before else "WRITE"
    assert [h["operation"] for h in _history(lakehouse)][-2:] == [beside_write, "MERGE"]


def test_a_delta_without_the_transaction_api_the_append_uses_gets_a_merge(
    lakehouse: InProcessLakehouse, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Delta upgrade that renames the Scala internals the append calls: py4j then fails to find
    # them, as it does here for a class that is not there. The batch is MERGEd, with a warning.
    from py4j.protocol import Py4JError

    def renamed(spark, batch_id):  # noqa: ANN001, ANN202 - the patched function's own signature
        missing = spark.sparkContext._jvm.org.apache.spark.sql.delta.NoSuchOperation
        return missing.apply(batch_id)

    monkeypatch.setattr(bronze, "_write_operation", renamed)
    with pytest.raises((Py4JError, TypeError)):
        renamed(lakehouse.spark, "probe")
    result = _land(lakehouse, "renamed.jsonl", [_envelope("d", o) for o in range(4)])
    assert (result.read, result.landed) == (4, 4)
    assert [r["offset"] for r in _bronze(lakehouse, "d")] == list(range(4))
    assert _history(lakehouse)[-1] == {"operation": "MERGE", "batch": result.batch_id}
    assert "batches of new offsets are MERGEd, not appended" in capsys.readouterr().err


def test_quotes_and_backslashes_in_topic_names(lakehouse: InProcessLakehouse) -> None:
    topic = "it's a \\ topic"
    lines = [_envelope(topic, o) for o in range(3)]
    assert _land(lakehouse, "q.jsonl", lines).landed == 3
    assert _land(lakehouse, "q.jsonl", lines).landed == 0


def test_many_partitions_use_one_range_per_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = [bronze.OffsetRange("t", p, p * 10, p * 10 + 5, 6) for p in range(3)]
    assert bronze.range_filter(ranges, "t.").count("between") == 3
    monkeypatch.setattr(bronze, "MAX_PARTITION_RANGES", 2)
    assert bronze.range_filter(ranges, "t.") == "(t.`topic` = 't' and (t.`offset` between 0 and 25))"


def test_many_topics_use_one_topic_list() -> None:
    # hundreds of OR terms outgrow a generated Java method (Spark then interprets the filter)
    ranges = [bronze.OffsetRange(f"t{i}", 0, i, i + 100, 101) for i in range(bronze.MAX_TOPIC_RANGES + 1)]
    text = bronze.range_filter(ranges, "t.")
    assert text.startswith("(t.`topic` in ('t0', 't1', ")
    assert text.endswith(f"and t.`offset` between 0 and {bronze.MAX_TOPIC_RANGES + 100})")
    assert bronze.range_filter(ranges[:3], "t.").count("between") == 3


def test_micro_batch_ranges_come_from_the_checkpoint(tmp_path: Path) -> None:
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'
    (offsets / "0").write_text(f'v1\n{meta}\n{{"a":{{"0":5,"1":0}}}}\n')
    (offsets / "1").write_text(f'v1\n{meta}\n{{"a":{{"0":9,"1":3}},"b":{{"0":2}}}}\n')
    # batch 0 starts at 0 (a covering bound), an end is exclusive, an empty partition is left out
    assert planned_ranges(tmp_path, 0) == [bronze.OffsetRange("a", 0, 0, 4, 5)]
    assert planned_ranges(tmp_path, 1) == [
        bronze.OffsetRange("a", 0, 5, 8, 4), bronze.OffsetRange("a", 1, 0, 2, 3), bronze.OffsetRange("b", 0, 0, 1, 2)]
    assert planned_ranges(tmp_path, 2) is None  # not planned: the loader falls back to counting


def test_consumer_defaults_give_way_to_the_users_options() -> None:
    parse = build_parser().parse_args
    args = parse(["ingest", "--bootstrap-servers", "h:1", "--topics", "a"])
    options = source_options(args, client_options(args), ["a"])
    for key, value in CONSUMER_DEFAULTS.items():
        assert options[f"kafka.{key}"] == value
    args = parse(["ingest", "--bootstrap-servers", "h:1", "--topics", "a",
                  "--kafka-option", "max.partition.fetch.bytes=1048576"])  # fmt: skip
    assert source_options(args, client_options(args), ["a"])["kafka.max.partition.fetch.bytes"] == "1048576"


def test_dump_file_path_is_read_once_per_pass(lakehouse: InProcessLakehouse, tmp_path: Path) -> None:
    """A dump still being appended to: the records of the first pass land, the rest next time."""
    path = tmp_path / "growing.jsonl"
    path.write_text("".join(_envelope("g", o) + "\n" for o in range(10)), encoding="utf-8")
    bronze.ensure_bronze(lakehouse.spark)
    dump = file_source.read_dump(lakehouse.spark, str(path))
    with path.open("a", encoding="utf-8") as out:
        out.write("".join(_envelope("g", o) + "\n" for o in range(10, 20)))
    result = bronze.land(lakehouse.spark, dump.records, fmt=None, source="file", ranges=dump.ranges)
    assert (result.read, result.landed) == (10, 10)
    assert _land(lakehouse, "growing.jsonl", path.read_text().splitlines()).landed == 10
    assert [r["offset"] for r in _bronze(lakehouse, "g")] == list(range(20))
