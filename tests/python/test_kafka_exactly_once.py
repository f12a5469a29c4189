"""SIGKILL the Kafka loader at random moments, again and again: bronze still holds every
(topic, partition, offset) exactly once, with the bytes that were produced.

Two ways of dying are mixed: the whole process group at once (Python driver and Spark JVM, as
an OOM kill or a lost machine would), and only the ``lakehouse`` Python process (what
``kill -9 <pid>`` does; its JVM must then go away by itself). Kills are either at a random
time after start (start-up, metastore, table creation, first batch) or shortly after a batch
finished (the next batch is then in flight). The seed is printed; set KAFKA_KILL_SEED to replay.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import time
import zlib
from pathlib import Path

from kafka_fixtures import (
    LAKEHOUSE,
    PROJECT,
    Broker,
    Record,
    ingest_kafka,
    kafka_broker_fixture,  # noqa: F401 - registers the kafka_broker fixture
    lakehouse_env,
    sql_json,
    summary,
    wait_group_gone,
)
from lakehouse.kafka_loader.options import checkpoint_name

TOPIC = "exactly.once"
TOTAL = 50_000
PER_TRIGGER = "5000"
KILLS = 4


def _records(rng: random.Random) -> list[Record]:
    """Keyed JSON changes of varying size, every 997th a tombstone."""
    out = []
    for i in range(TOTAL):
        value = None if i % 997 == 0 else (
            f'{{"i":{i},"pad":"{"x" * rng.randrange(20, 300)}"}}'.encode()
        )
        out.append(Record(f"key-{i % 1000}".encode(), value))
    return out


def _wait_for_batch_line(err_path: Path, proc: subprocess.Popen, timeout: float) -> bool:
    """Wait until the loader reported a finished batch (so the next one is under way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if re.search(r"\] batch \d+:", err_path.read_text(errors="replace")):
            return True
        time.sleep(0.2)
    return False


def test_sigkill_at_random_moments_lands_every_offset_exactly_once(
    kafka_broker: Broker, tmp_path: Path
) -> None:
    seed = int(os.environ.get("KAFKA_KILL_SEED", random.randrange(1 << 30)))
    print(f"KAFKA_KILL_SEED={seed}")
    rng = random.Random(seed)
    kafka_broker.create_topic(TOPIC, 3)
    produced = kafka_broker.produce(TOPIC, _records(rng))
    root = tmp_path / "lakehouse"
    args = [LAKEHOUSE, "ingest", "--bootstrap-servers", kafka_broker.bootstrap,
            "--topics", TOPIC, "--max-offsets-per-trigger", PER_TRIGGER]  # fmt: skip
    modes = ["group", "python"] * (KILLS // 2)
    rng.shuffle(modes)
    history = []
    interrupted = 0
    for attempt, mode in enumerate(modes):
        err_path = tmp_path / f"kill-{attempt}.err"
        with open(err_path, "w") as err, open(tmp_path / f"kill-{attempt}.out", "w") as out:
            proc = subprocess.Popen(
                args, env=lakehouse_env(root), cwd=PROJECT, stdout=out, stderr=err,
                start_new_session=True,
            )  # fmt: skip
            if attempt % 2 == 0:
                when = f"{rng.uniform(3, 15):.1f}s after start"
                time.sleep(float(when.split("s")[0]))
            else:
                _wait_for_batch_line(err_path, proc, timeout=180)
                delay = rng.uniform(0, 2.5)
                when = f"{delay:.1f}s after a batch"
                time.sleep(delay)
            if proc.poll() is not None:
                history.append(f"run {attempt}: finished before the kill ({when})")
                continue
            if mode == "group":
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            # The JVM must not outlive its driver (it would hold the Derby metastore lock).
            assert wait_group_gone(proc.pid, timeout=60), f"JVM survived run {attempt}"
        text = err_path.read_text(errors="replace")
        interrupted += "was interrupted before its commit" in text
        batches = len(re.findall(r"\] batch \d+:", text))
        history.append(f"run {attempt}: SIGKILL {mode} {when}, {batches} batches reported")
    print("\n".join(history))

    final = ingest_kafka(root, kafka_broker.bootstrap, "--topics", TOPIC,
                         "--max-offsets-per-trigger", PER_TRIGGER)  # fmt: skip
    interrupted += "was interrupted before its commit" in final.stderr
    print(f"final run: {summary(final)}; interrupted batches replayed: {interrupted}")
    assert interrupted >= 1, "no kill hit a batch in flight:\n" + "\n".join(history)

    expected: dict[int, dict[str, int]] = {}
    for rec in produced:
        e = expected.setdefault(rec.partition or 0, {"n": 0, "crc": 0, "nulls": 0, "hi": -1})
        e["n"] += 1
        e["crc"] += zlib.crc32(rec.value or b"")
        e["nulls"] += rec.value is None
        e["hi"] = max(e["hi"], rec.offset or 0)
    rows = sql_json(
        root,
        "select partition, count(*) as n, count(distinct offset) as d, min(offset) as lo, "
        "max(offset) as hi, sum(crc32(coalesce(value, x''))) as crc, "
        "sum(if(value is null, 1, 0)) as nulls "
        f"from bronze.kafka_records where topic = '{TOPIC}' group by partition",
    )
    got = {r["partition"]: r for r in rows}
    assert sorted(got) == sorted(expected) == [0, 1, 2], (got, history)
    for part, e in expected.items():
        g = got[part]
        context = f"partition {part} (seed {seed}): {g}\n" + "\n".join(history)
        assert g["n"] == g["d"] == e["n"], "duplicates or gaps in " + context
        assert (g["lo"], g["hi"]) == (0, e["hi"]) == (0, e["n"] - 1), context
        assert (g["crc"], g["nulls"]) == (e["crc"], e["nulls"]), "bytes differ in " + context
    assert sum(r["n"] for r in rows) == TOTAL

    # The narrowest window: killed after the Delta commit of batch N but before the checkpoint
    # recorded it. On disk that is exactly "commits/N missing"; the replay must land nothing.
    commits = root / "checkpoints" / checkpoint_name([TOPIC], None) / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    replay = ingest_kafka(root, kafka_broker.bootstrap, "--topics", TOPIC,
                          "--max-offsets-per-trigger", PER_TRIGGER)  # fmt: skip
    counts = summary(replay)
    assert counts["read"] > 0 and counts["landed"] == 0, counts
    assert f"batch {last} was interrupted before its commit" in replay.stderr
