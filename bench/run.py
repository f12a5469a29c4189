"""The cdc-lakehouse benchmark: landing, first build, incremental build, the plain-Spark floor.

    .venv/bin/python bench/run.py                 # 1,000,000 changes
    .venv/bin/python bench/run.py --changes 4000000 --no-kafka
    .venv/bin/python bench/run.py --scales 1000000,2000000,4000000

For each scale, in a fresh LAKEHOUSE_DIR under bench/out/: generate the changes (bench/generate.py),
land them from a file (and, unless --no-kafka, from the local broker into a second lakehouse),
run the first `lakehouse build` (dbt run + dbt test, timed apart), land 1% more changes and run
the incremental build, and measure the floor: plain Spark reading the same bronze table,
parsing the JSON and keeping the latest change per key in one query, no dbt, no Delta writes.
Each step runs as its own process, as a user runs it; the peak resident memory of its Spark
driver JVM is sampled from /proc. Prints a table and writes bench/out/summary.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PROJECT = BENCH.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(BENCH))

import generate  # noqa: E402

FLOOR_SCRIPT = r"""
import sys, time
from pyspark.sql import functions as F
from lakehouse.session import get_spark
spark = get_spark("bench-floor")
started = time.monotonic()
raw = spark.table("bronze.kafka_records").select(
    F.col("topic"), F.col("offset"), F.col("value").cast("string").alias("v"))
dbz = F.from_json("v", "struct<payload: struct<op: string, before: map<string,string>, "
                       "after: map<string,string>, source: struct<db: string, `table`: string, pos: bigint>>>")
canal = F.from_json("v", "struct<type: string, `table`: string, database: string, id: bigint, "
                         "data: array<map<string,string>>>")
parsed = raw.select(
    "offset",
    F.coalesce(dbz["payload"]["source"]["table"], canal["table"]).alias("tbl"),
    F.coalesce(dbz["payload"]["after"]["id"], dbz["payload"]["before"]["id"], canal["data"][0]["id"]).alias("id"),
    F.coalesce(dbz["payload"]["source"]["pos"], canal["id"]).alias("seq"),
    F.coalesce(dbz["payload"]["op"], canal["type"]).alias("op"),
    F.coalesce(F.to_json(dbz["payload"]["after"]), F.to_json(canal["data"][0])).alias("row"),
)
latest = parsed.groupBy("tbl", "id").agg(F.max_by(F.struct("op", "row"), F.struct("seq", "offset")).alias("last"))
live = latest.where(~F.col("last.op").isin("d", "DELETE")).count()
print(f"FLOOR {time.monotonic() - started:.3f} {live}")
"""


class PeakMemory:
    """Samples the resident memory of every java process under ``pid`` until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kib, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _descendants(self) -> list[int]:
        children = {}
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(proc.name))
        found, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            for c in children.get(p, []):
                found.append(c)
                todo.append(c)
        return found

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self._descendants():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    if "java" not in Path(f"/proc/{pid}/comm").read_text():
                        continue
                    rss = int(next(x for x in status.splitlines() if x.startswith("VmRSS")).split()[1])
                    self.peak_kib = max(self.peak_kib, rss)
                except (OSError, StopIteration, ValueError):
                    pass
            self._stop.wait(0.5)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_kib / 1024 / 1024


def step(name: str, cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``cmd``; returns (seconds, peak driver GiB, stdout). Fails loudly with its output."""
    print(f"[bench] {name}: {' '.join(cmd[:4])} ...", file=sys.stderr, flush=True)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=PROJECT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    memory = PeakMemory(proc.pid)
    out, err = proc.communicate()
    seconds, peak = time.monotonic() - started, memory.stop()
    if proc.returncode != 0:
        raise SystemExit(f"[bench] {name} failed ({proc.returncode}):\n{out[-3000:]}\n{err[-3000:]}")
    print(f"[bench] {name}: {seconds:.1f}s, driver peak {peak:.2f} GiB", file=sys.stderr, flush=True)
    return seconds, peak, out


def run_scale(changes: int, tables: int, kafka: bool, out: Path) -> dict:
    """Every measurement at one scale, in a fresh lakehouse under ``out``."""
    root = out / f"lakehouse-{changes}"
    shutil.rmtree(root, ignore_errors=True)
    env = dict(os.environ, LAKEHOUSE_DIR=str(root))
    lakehouse = str(BIN / "lakehouse")

    offsets: dict[str, int] = {}
    state: dict = {}
    first_file, more_file = out / f"changes-{changes}.jsonl", out / f"more-{changes}.jsonl"
    generate.write_kcat(first_file, generate.changes(changes, tables, 1, 0, state), offsets)
    increment = max(1, changes // 100)
    generate.write_kcat(more_file, generate.changes(increment, tables, 2, changes, state), offsets)

    result: dict = {"changes": changes, "tables": tables, "increment": increment}
    secs, peak, _ = step("land from file", [lakehouse, "ingest", "--from-file", str(first_file)], env)
    result["land_file_s"], result["land_file_records_per_s"] = secs, changes / secs
    result["land_file_peak_gib"] = peak

    secs, peak, _ = step("first build: dbt run", [lakehouse, "build", "--exclude", "resource_type:test"], env)
    result["first_run_s"], result["first_run_changes_per_s"], result["first_run_peak_gib"] = secs, changes / secs, peak
    secs, peak, _ = step("first build: dbt test", [str(BIN / "dbt"), "test", "--profiles-dir", "profiles"], env)
    result["first_test_s"], result["first_test_peak_gib"] = secs, peak

    secs, peak, out_text = step("floor: plain Spark", [str(BIN / "python"), "-c", FLOOR_SCRIPT], env)
    floor_line = next(line for line in out_text.splitlines() if line.startswith("FLOOR"))
    result["floor_query_s"] = float(floor_line.split()[1])
    result["floor_process_s"] = secs
    result["first_run_vs_floor"] = result["first_run_s"] / secs

    step("land 1% more", [lakehouse, "ingest", "--from-file", str(more_file)], env)
    secs, peak, _ = step("incremental build: dbt run", [lakehouse, "build", "--exclude", "resource_type:test"], env)
    result["incremental_run_s"], result["incremental_run_peak_gib"] = secs, peak
    result["incremental_vs_first"] = secs / result["first_run_s"]

    if kafka:
        result.update(kafka_landing(first_file, changes, out))
    return result


def kafka_landing(path: Path, changes: int, out: Path) -> dict:
    """Produce the file's records to the local broker, then time `lakehouse ingest --bootstrap-servers`."""
    from confluent_kafka import Producer
    from lakehouse import broker

    directory = out / "kafka"
    info = broker.start(port=broker.free_port(), directory=directory)
    try:
        producer = Producer({"bootstrap.servers": info.bootstrap_servers, "linger.ms": 50,
                             "batch.num.messages": 10000, "compression.type": "lz4"})
        topics = set()
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                rec = json.loads(line)
                topics.add(rec["topic"])
                while True:
                    try:
                        producer.produce(rec["topic"], rec["payload"].encode(),
                                         rec["key"].encode() if rec["key"] else None)
                        break
                    except BufferError:
                        producer.poll(0.1)
        producer.flush()
        root = out / f"lakehouse-kafka-{changes}"
        shutil.rmtree(root, ignore_errors=True)
        env = dict(os.environ, LAKEHOUSE_DIR=str(root))
        secs, peak, _ = step("land from Kafka", [str(BIN / "lakehouse"), "ingest", "--bootstrap-servers",
                                                 info.bootstrap_servers, "--topic-pattern", "bench[.].*"], env)
        return {"land_kafka_s": secs, "land_kafka_records_per_s": changes / secs, "land_kafka_peak_gib": peak}
    finally:
        broker.stop(directory)


def table(results: list[dict]) -> str:
    """The figures as a Markdown table."""
    rows = [
        ("changes", "changes", "{:,}"),
        ("land from file (records/s)", "land_file_records_per_s", "{:,.0f}"),
        ("land from Kafka (records/s)", "land_kafka_records_per_s", "{:,.0f}"),
        ("first build, dbt run (s)", "first_run_s", "{:.1f}"),
        ("first build (changes/s)", "first_run_changes_per_s", "{:,.0f}"),
        ("first build, dbt test (s)", "first_test_s", "{:.1f}"),
        ("floor: plain Spark (s)", "floor_process_s", "{:.1f}"),
        ("first build / floor", "first_run_vs_floor", "{:.2f}x"),
        ("incremental build after 1% (s)", "incremental_run_s", "{:.1f}"),
        ("incremental / first build", "incremental_vs_first", "{:.1%}"),
        ("driver peak, first build (GiB)", "first_run_peak_gib", "{:.2f}"),
    ]
    lines = ["| measure | " + " | ".join(f"{r['changes']:,}" for r in results) + " |",
             "| --- |" + " --- |" * len(results)]
    for label, key, fmt in rows[1:]:
        cells = [fmt.format(r[key]) if key in r else "-" for r in results]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes to generate (default 1,000,000)")
    parser.add_argument("--scales", help="comma-separated change counts, e.g. 1000000,2000000,4000000")
    parser.add_argument("--tables", type=int, default=50, help="source tables (default 50)")
    parser.add_argument("--no-kafka", action="store_true", help="skip landing through the local broker")
    parser.add_argument("--out", type=Path, default=BENCH / "out", help="work folder (default bench/out)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    scales = [int(s) for s in args.scales.split(",")] if args.scales else [args.changes]
    results = [run_scale(n, args.tables, not args.no_kafka, args.out) for n in scales]
    summary = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                           "python": platform.python_version()}, "results": results}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(table(results))
    print(f"\nsummary: {args.out / 'summary.json'}")


if __name__ == "__main__":
    main()
