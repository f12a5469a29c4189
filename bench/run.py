"""The cdc-lakehouse benchmark: landing, first build, incremental build, the plain-Spark floor.

    .venv/bin/python bench/run.py                 # 1,000,000 changes
    .venv/bin/python bench/run.py --changes 20000 --no-kafka      # a quick look
    .venv/bin/python bench/run.py --scales 1000000,2000000,4000000

First dbt parses the project once (`dbt parse`, untimed in the builds: a checkout's first dbt
command parses the whole project, every later one only what changed). Then for each scale, in a
fresh LAKEHOUSE_DIR under bench/out/: generate the changes (bench/generate.py:
four vendor formats, one kcat dump of every topic), land it from the file, run the first build (`lakehouse
build --exclude resource_type:test`: seeds and models) and its data tests (`dbt test`) timed
apart, measure the floor (plain Spark reading the same bronze table, parsing the JSON of every
format and keeping the latest change per key in one query: no dbt, no Delta writes; run before
the first build and after its data tests, the faster of the two counts), run the hand-written
comparator (bench/handwritten.py: the Databricks pattern a user writes, from_json, a window and
one MERGE) on the first dump and on the 1% increment, land 1%
more changes and run the incremental build, then a build with nothing new (the fixed cost of a
build process); unless --no-serve, start `lakehouse serve` (a long-lived Spark: the Thrift
server) on the same lakehouse and run the next increments' builds through it (dbt's `thrift`
target), as a deployment with a running Spark cluster does; unless --no-kafka, land two more
increments from the local broker with a following loader that builds them in its own process
(`lakehouse ingest --follow --build`), and produce the first records to the broker and land
them from there into a second lakehouse, twice: the broker's first read of the topics, then
from a broker that has served them once, as a running cluster's broker has. Each step runs as
its own process, as a user runs it; the peak resident memory of its Spark driver JVM is sampled
from /proc.

The served builds need the loader and the server to share the metastore, which Derby (one
process at a time) cannot: with --serve (the default when PostgreSQL's server programs are
installed, `make postgres-bin`), the bench starts its own PostgreSQL under bench/out/postgres and
every step of a scale uses a fresh metastore database there.

The answer is checked too, untimed: after each build the live rows of gold.cdc_current_state
per table must equal the generator's own final state, the quarantine must be empty, the data
tests must pass and the floor must count the same live rows. A wrong answer is reported loudly
and makes the exit status 1: a fast wrong pipeline is not a result.

Prints a Markdown table and writes bench/out/summary.json (the machine, a yardstick of its speed: a
fixed Python loop timed before the scales, and every figure).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PROJECT = BENCH.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(BENCH))

import generate  # noqa: E402
from lakehouse.local import broker, postgres  # noqa: E402

# One query over bronze, one branch per format (each reads only its own topics): parse the
# message, take the table, key, vendor order and after image, keep the latest change per
# (table, key) with max_by and count those that are not deletes. Nothing is written.
FLOOR_SCRIPT = r"""
import time
from functools import reduce
from pyspark.sql import functions as F
from lakehouse.session import get_spark

spark = get_spark("bench-floor")
started = time.monotonic()
raw = spark.table("bronze.kafka_records").select(
    "topic", "offset", F.col("key").cast("string").alias("k"), F.col("value").cast("string").alias("v"))


def records(fmt, schema):
    rows = raw.where(F.col("topic").startswith(f"bench.{fmt}.") & F.col("v").isNotNull())
    return rows.select("offset", "k", F.from_json("v", schema).alias("m"))


def binlog_file(text):
    return F.regexp_extract(text, r"([0-9]+)$", 1).cast("bigint")


columns = ["tbl", "key", "s1", "s2", "offset", "deleted", "row"]
dbz = records("debezium-json", "struct<after: string, op: string, "
              "source: struct<`table`: string, file: string, pos: bigint>>").select(
    F.col("m.source.table").alias("tbl"), F.col("k").alias("key"), binlog_file("m.source.file").alias("s1"),
    F.col("m.source.pos").alias("s2"), "offset", (F.col("m.op") == "d").alias("deleted"),
    F.col("m.after").alias("row"))
canal = records("canal-json", "struct<data: array<map<string, string>>, pkNames: array<string>, "
                "`table`: string, type: string, es: bigint, id: bigint>").select(
    F.col("m.table").alias("tbl"),
    F.to_json(F.map_filter(F.col("m.data")[0], lambda c, v: F.array_contains(F.col("m.pkNames"), c))).alias("key"),
    F.col("m.es").alias("s1"), F.col("m.id").alias("s2"), "offset", (F.col("m.type") == "DELETE").alias("deleted"),
    F.to_json(F.col("m.data")[0]).alias("row"))
maxwell = records("maxwell-json", "struct<`table`: string, type: string, position: string, data: string>").select(
    F.col("m.table").alias("tbl"), F.col("k").alias("key"),
    binlog_file(F.regexp_extract("m.position", r"^([^:]*)", 1)).alias("s1"),
    F.regexp_extract("m.position", r":([0-9]+)$", 1).cast("bigint").alias("s2"), "offset",
    (F.col("m.type") == "delete").alias("deleted"), F.col("m.data").alias("row"))
oms = records("oms-json", "struct<recordType: string, postStruct: string, allMetaData: struct<table_name: string, "
              "record_primary_value: string, storeDataSequence: string>>").where(
    F.col("m.recordType").isin("INSERT", "UPDATE", "DELETE", "ROW")).select(
    F.col("m.allMetaData.table_name").alias("tbl"), F.col("m.allMetaData.record_primary_value").alias("key"),
    F.substring("m.allMetaData.storeDataSequence", 1, 10).cast("bigint").alias("s1"),
    F.expr("cast(substr(m.allMetaData.storeDataSequence, 11) as bigint)").alias("s2"), "offset",
    (F.col("m.recordType") == "DELETE").alias("deleted"), F.col("m.postStruct").alias("row"))

changes = reduce(lambda a, b: a.unionByName(b), [dbz, canal, maxwell, oms]).where(F.col("tbl").isNotNull())
latest = changes.groupBy("tbl", "key").agg(
    F.max_by(F.struct("deleted", "row"), F.struct("s1", "s2", "offset")).alias("last"))
live = latest.where(~F.col("last.deleted")).count()
print(f"FLOOR {time.monotonic() - started:.3f} {live}")
"""

CHECK_QUERY = (
    "select 'live' as what, source_table as name, count(*) as n from gold.cdc_current_state group by source_table "
    "union all select 'quarantined', concat(coalesce(source_format, '?'), ': ', coalesce(reason, '?')), count(*) "
    "from silver.cdc_quarantine group by source_format, reason"
)


class PeakMemory:
    """Samples the resident memory of every java process under ``pid`` until stopped."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kib, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _descendants(self) -> list[int]:
        children: dict[int, list[int]] = {}
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
                    if "java" not in Path(f"/proc/{pid}/comm").read_text():
                        continue
                    status = Path(f"/proc/{pid}/status").read_text()
                    rss = int(next(x for x in status.splitlines() if x.startswith("VmRSS")).split()[1])
                    self.peak_kib = max(self.peak_kib, rss)
                except (OSError, StopIteration, ValueError):
                    pass
            self._stop.wait(0.5)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_kib / 1024 / 1024


class Step:
    """One process as a user runs it: seconds, driver peak (GiB), output, exit status."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], check: bool = True) -> None:
        shown = [Path(cmd[0]).name] + ["<script>" if "\n" in c else c for c in cmd[1:6]]
        print(f"[bench] {name}: {' '.join(shown)} ...", file=sys.stderr, flush=True)
        started, self.started_at = time.monotonic(), time.time()
        proc = subprocess.Popen(cmd, env=env, cwd=PROJECT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        memory = PeakMemory(proc.pid)
        self.out, self.err = proc.communicate()
        self.seconds, self.peak_gib, self.returncode = time.monotonic() - started, memory.stop(), proc.returncode
        if check and self.returncode != 0:
            raise SystemExit(f"[bench] {name} failed ({self.returncode}):\n{self.out[-3000:]}\n{self.err[-3000:]}")
        print(f"[bench] {name}: {self.seconds:.1f}s, driver peak {self.peak_gib:.2f} GiB", file=sys.stderr, flush=True)


def land(name: str, args: list[str], expected: dict[str, int], env: dict[str, str], problems: list[str]) -> dict:
    """One ``lakehouse ingest`` of every topic, as a user lands a dump or a cluster: no
    ``--format``, the build learns each topic's format from ``generate.build_vars()``."""
    step = Step(name, [str(BIN / "lakehouse"), "ingest", *args], env)
    landed = re.search(r"landed (\d+),", step.out)
    records = sum(expected.values())
    if landed is None or int(landed.group(1)) != records:
        problems.append(f"{name}: landed {landed.group(1) if landed else '?'} of {records} records")
    return {"s": step.seconds, "records": records, "records_per_s": records / step.seconds,
            "peak_gib": step.peak_gib, "per_format": expected}


def floor_run(name: str, env: dict[str, str]) -> dict:
    """The floor once (FLOOR_SCRIPT, its own process): its query's and its process's seconds,
    the driver's peak and the live rows it counts. The bench runs it before the first build
    and after its data tests: the floor is one long query, and this machine's speed moves it
    more than it moves a build of many steps."""
    step = Step(name, [str(BIN / "python"), "-c", FLOOR_SCRIPT], env)
    _, query_s, live = next(line for line in step.out.splitlines() if line.startswith("FLOOR")).split()
    return {"query_s": float(query_s), "process_s": step.seconds, "peak_gib": step.peak_gib, "live": int(live)}


def run_results(target_path: str | None = None, since: float | None = None) -> list[dict]:
    """The node results of the last dbt command (run_results.json in dbt's target folder:
    ``target_path``, else ``DBT_TARGET_PATH`` when set); none when the file is older than
    ``since`` (``time.time()`` as the command started: it wrote no file here, as when the
    ``lakehouse`` command found another checkout's project) or cannot be read."""
    path = PROJECT / (target_path or os.environ.get("DBT_TARGET_PATH", "target")) / "run_results.json"
    try:
        if since is not None and path.stat().st_mtime < since:
            return []
        return json.loads(path.read_text(encoding="utf-8"))["results"]
    except (OSError, KeyError, ValueError):
        return []


def model_seconds(target_path: str | None = None, since: float | None = None) -> dict[str, float]:
    """Seconds per model and seed of the last dbt build (:func:`run_results`): where the time went.

    Empty, so that the table leaves the build out rather than show another run's nodes, when the
    build wrote no file (``since``) or the file holds no model (the data tests' run wrote it):
    otherwise the data tests' timings would show under every build but the first."""
    return {r["unique_id"].rsplit(".", 1)[-1]: round(r["execution_time"], 1)
            for r in run_results(target_path, since) if r["unique_id"].split(".", 1)[0] in ("model", "seed")}


def failure_lines(output: str) -> list[str]:
    """dbt's lines about failed nodes in a command's output, the last ten."""
    return [line.strip() for line in output.splitlines() if "FAIL" in line or "ERROR" in line][-10:]


def check_answer(when: str, expected: dict[str, int], env: dict[str, str], problems: list[str]) -> int:
    """gold's live rows per table against the generator's state, and an empty quarantine (untimed)."""
    step = Step(f"check after {when}", [str(BIN / "lakehouse"), "sql", CHECK_QUERY, "--json"], env)
    live, quarantined = {}, {}
    for line in step.out.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            (live if row["what"] == "live" else quarantined)[row["name"]] = int(row["n"])
    if quarantined:
        problems.append(f"after {when}: {sum(quarantined.values())} records in silver.cdc_quarantine: {quarantined}")
    if live != expected:
        wrong = {t: (expected.get(t, 0), live.get(t, 0)) for t in sorted(set(live) | set(expected))
                 if live.get(t, 0) != expected.get(t, 0)}
        problems.append(f"after {when}: gold.cdc_current_state live rows differ from the generator's "
                        f"(table: (expected, gold)): {wrong}")
    return sum(live.values())


def run_scale(changes: int, tables: int, kafka: bool, out: Path, metastore: dict[str, str] | None) -> dict:
    """Every measurement at one scale, in a fresh lakehouse under ``out``; with ``metastore`` (the
    LAKEHOUSE_METASTORE_* of a fresh PostgreSQL database) also the builds through a server."""
    root = out / f"lakehouse-{changes}"
    shutil.rmtree(root, ignore_errors=True)
    env = dict(os.environ, LAKEHOUSE_DIR=str(root), **(metastore or {}))
    problems: list[str] = []

    started = time.monotonic()
    source, offsets = generate.Source(tables, seed=1), {}
    first_file, more_file = out / f"changes-{changes}.jsonl", out / f"more-{changes}.jsonl"
    first_counts = generate.write_kcat(first_file, source.changes(changes), offsets)
    expected_first = source.live_counts()
    increment = max(1, changes // 100)
    more_counts = generate.write_kcat(more_file, source.changes(increment), offsets)
    expected_more = source.live_counts()
    result: dict = {"changes": changes, "tables": tables, "increment": increment,
                    "records": sum(first_counts.values()), "increment_records": sum(more_counts.values()),
                    "records_per_format": first_counts, "generate_s": time.monotonic() - started,
                    "live_rows_expected": sum(expected_first.values())}
    print(f"[bench] generated {changes:,} changes ({result['records']:,} records) and {increment:,} more "
          f"in {result['generate_s']:.1f}s", file=sys.stderr, flush=True)

    landed = land("land from file", ["--from-file", str(first_file)], first_counts, env, problems)
    result["land_file"] = landed
    result["land_file_s"], result["land_file_records_per_s"] = landed["s"], landed["records_per_s"]
    result["land_file_peak_gib"] = landed["peak_gib"]

    floors = [floor_run("floor: plain Spark, before the first build", env)]
    build_cmd = [str(BIN / "lakehouse"), "build", "--exclude", "resource_type:test", "--vars", generate.build_vars()]
    build = Step("first build", build_cmd, env)
    result["first_build_s"], result["first_build_peak_gib"] = build.seconds, build.peak_gib
    result["first_build_changes_per_s"] = changes / build.seconds
    result["first_build_models_s"] = model_seconds(since=build.started_at)
    result["live_rows_gold"] = check_answer("the first build", expected_first, env, problems)

    test = Step("data tests", [str(BIN / "dbt"), "test", "--profiles-dir", str(PROJECT / "profiles"),
                               "--project-dir", str(PROJECT),
                               "--vars", generate.build_vars()], env, check=False)
    result["first_test_s"], result["first_test_peak_gib"] = test.seconds, test.peak_gib
    if test.returncode != 0:
        problems.append("dbt test failed: " + "; ".join(failure_lines(test.out)))

    floors.append(floor_run("floor: plain Spark, after the data tests", env))
    # the faster of the two floors: the ratio is judged against the floor the host allowed,
    # never against a floor that a slow minute made long (the host's speed varies within an hour)
    floor = min(floors, key=lambda run: run["process_s"])
    result["floor_runs_s"] = [run["process_s"] for run in floors]
    result["floor_query_s"], result["floor_process_s"] = floor["query_s"], floor["process_s"]
    result["floor_peak_gib"] = max(run["peak_gib"] for run in floors)
    result["live_rows_floor"] = floor["live"]
    for run in floors:
        if run["live"] != result["live_rows_gold"]:
            problems.append(f"the floor counts {run['live']:,} live rows, "
                            f"gold.cdc_current_state {result['live_rows_gold']:,}")
    result["first_build_vs_floor"] = build.seconds / floor["process_s"]
    result["first_build_vs_floor_query"] = build.seconds / floor["query_s"]

    result.update(handwritten_runs(first_file, more_file, expected_first, expected_more, out, changes, problems))
    result["first_load_vs_handwritten"] = (result["land_file_s"] + build.seconds) / result["handwritten_first_s"]

    result["land_increment"] = land("land 1% more", ["--from-file", str(more_file)], more_counts, env, problems)
    inc = Step("incremental build", build_cmd, env)
    result["incremental_build_s"], result["incremental_build_peak_gib"] = inc.seconds, inc.peak_gib
    result["incremental_vs_first"] = inc.seconds / build.seconds
    result["incremental_build_models_s"] = model_seconds(since=inc.started_at)
    check_answer("the incremental build", expected_more, env, problems)

    # the fixed cost of a build process: nothing new to parse, merge or type
    idle = Step("build with nothing new", build_cmd, env)
    result["idle_build_s"], result["idle_build_models_s"] = idle.seconds, model_seconds(since=idle.started_at)
    result["incremental_above_idle_s"] = inc.seconds - idle.seconds
    result.update(land_and_build(source, increment, offsets, env, out, changes, problems))
    result["land_and_build_separately_s"] = result["land_increment"]["s"] + inc.seconds
    result["increment_vs_handwritten"] = result["land_and_build_s"] / result["handwritten_increment_s"]

    if metastore:
        result.update(served_builds(source, increment, offsets, build_cmd, env, out, changes, problems))
        result["served_incremental_vs_first"] = result["served_incremental_s"] / build.seconds
    if kafka:
        result.update(follow_builds(source, increment, offsets, env, out, changes, problems))
        result["follow_incremental_vs_first"] = result["follow_incremental_s"] / build.seconds
        result.update(kafka_landing(first_file, first_counts, changes, out, problems))
    result.update(settling_build(source, increment, offsets, build_cmd, env, out, changes, problems))
    result["problems"] = problems
    return result


def handwritten_runs(first_file: Path, more_file: Path, expected_first: dict[str, int],
                     expected_more: dict[str, int], out: Path, changes: int, problems: list[str]) -> dict:
    """The comparator (bench/handwritten.py, each run its own process): the job a user writes by
    hand, on the first dump and then on the 1% increment that the incremental build reads. Its
    answer is checked as the project's is: live rows per table equal to the generator's."""
    target = out / f"handwritten-{changes}" / "current_state"
    shutil.rmtree(target.parent, ignore_errors=True)
    result: dict = {}
    for name, path, expected in (("first", first_file, expected_first), ("increment", more_file, expected_more)):
        step = Step(f"hand-written job: {name}", [str(BIN / "python"), str(BENCH / "handwritten.py"), str(path),
                                                  str(target)], dict(os.environ))
        _, job_s, _, per_table = next(line for line in step.out.splitlines()
                                      if line.startswith("HANDWRITTEN")).split(" ", 3)
        if json.loads(per_table) != expected:
            problems.append(f"the hand-written job's live rows after its {name} run differ from the generator's")
        result[f"handwritten_{name}_s"], result[f"handwritten_{name}_job_s"] = step.seconds, float(job_s)
    return result


def settling_build(source: generate.Source, increment: int, offsets: dict, build_cmd: list[str],
                   env: dict[str, str], out: Path, changes: int, problems: list[str]) -> dict:
    """The increment that settles the history's closers: 1% more landed, then one build in a
    process of its own (as the incremental build above) whose pre-hook first MERGEs the closers
    every append before it left (every build since the first one) into the versions they end.
    A lakehouse settles every cdc_history_settle_every appends (10 by default) and before any
    increment that MERGEs; the bench's other builds append only, so this one measures that cost."""
    path = out / f"more6-{changes}.jsonl"
    counts = generate.write_kcat(path, source.changes(increment), offsets)
    expected = source.live_counts()
    land("land 1% more to settle", ["--from-file", str(path)], counts, env, problems)
    settle_vars = json.dumps({**json.loads(generate.build_vars()), "cdc_history_settle_every": 1})
    step = Step("incremental build that settles the history", [*build_cmd[:-1], settle_vars], env)
    check_answer("the build that settles the history", expected, env, problems)
    return {"settling_build_s": step.seconds, "settling_build_models_s": model_seconds(since=step.started_at),
            "settling_build_peak_gib": step.peak_gib}


def land_and_build(source: generate.Source, increment: int, offsets: dict, env: dict[str, str],
                   out: Path, changes: int, problems: list[str]) -> dict:
    """1% more landed and built by one process: ``lakehouse ingest ... --build``, as a
    scheduled job runs a trickle. Against the landing and the incremental build as two
    processes (each starting a JVM, Spark and the metastore; the build dbt too). The build's
    share is the process's time after the landing's summary line (which says the landing's)."""
    path = out / f"more1-{changes}.jsonl"
    counts = generate.write_kcat(path, source.changes(increment), offsets)
    expected = source.live_counts()
    build_args = shlex.join(["--exclude", "resource_type:test", "--vars", generate.build_vars()])
    command = [str(BIN / "lakehouse"), "ingest", "--from-file", str(path), "--build", "--build-args", build_args]
    step = Step("land 1% more and build, one process", command, env)
    landed = re.search(r"landed (\d+), .*, ([\d.]+)s\)", step.out)
    records = sum(counts.values())
    if landed is None or int(landed.group(1)) != records:
        problems.append(f"land 1% more and build: landed {landed.group(1) if landed else '?'} of {records}")
    check_answer("the build after landing in one process", expected, env, problems)
    land_s = float(landed.group(2)) if landed else float("nan")
    return {"land_and_build_s": step.seconds, "land_and_build_land_s": land_s,
            "land_and_build_build_s": step.seconds - land_s, "land_and_build_peak_gib": step.peak_gib}


def served_builds(source: generate.Source, increment: int, offsets: dict, build_cmd: list[str],
                  env: dict[str, str], out: Path, changes: int, problems: list[str]) -> dict:
    """Builds through ``lakehouse serve``: the same ``lakehouse build`` with ``--target thrift``.

    A fresh process per build pays the JVM's start and warm-up every time (the build with
    nothing new); a deployment that keeps Spark running (the Thrift server, a cluster) pays them
    once. The server starts, builds once with nothing new (its own warm-up, reported), then two
    more 1% increments are landed (by the loader, beside the server: the shared metastore) and
    built through it; the second is the steady state a trickle of increments sees. Then a build
    with nothing new, and the answer check. The server's driver memory is sampled throughout.
    """
    from lakehouse.ports import free_port
    from lakehouse.serve import stop_server

    port = free_port()
    # a target folder of its own: dbt keeps its partial parse there, and it parses the whole
    # project again when the target (the profile) changed since that parse. In one folder, the
    # next scale's first build (the local target) would pay a full parse after these builds
    served_target = os.path.join(os.environ.get("DBT_TARGET_PATH", "target"), "thrift")
    served_env = dict(env, LAKEHOUSE_THRIFT_PORT=str(port), DBT_TARGET_PATH=served_target)
    served_cmd = [*build_cmd, "--target", "thrift"]
    log_out, log_err = out / f"serve-{changes}.out", out / f"serve-{changes}.err"
    print(f"[bench] lakehouse serve --port {port} ...", file=sys.stderr, flush=True)
    started = time.monotonic()
    with log_out.open("wb") as stdout, log_err.open("wb") as stderr:
        server = subprocess.Popen([str(BIN / "lakehouse"), "serve", "--port", str(port)], env=env, cwd=PROJECT,
                                  stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
    memory = PeakMemory(server.pid)
    result: dict = {}
    try:
        while "Stop with Ctrl-C" not in log_out.read_text(errors="replace"):
            if server.poll() is not None or time.monotonic() - started > 300:
                raise SystemExit(f"[bench] lakehouse serve did not start ({server.poll()}):\n"
                                 f"{log_err.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        result["serve_start_s"] = time.monotonic() - started
        warmup = Step("server: build with nothing new (its first)", served_cmd, served_env)
        result["served_warmup_s"] = warmup.seconds
        builds = []
        for n in (2, 3):
            path = out / f"more{n}-{changes}.jsonl"
            counts = generate.write_kcat(path, source.changes(increment), offsets)
            expected = source.live_counts()
            land(f"land 1% more ({n})", ["--from-file", str(path)], counts, env, problems)
            builds.append(Step(f"server: incremental build ({n - 1})", served_cmd, served_env))
        result["served_first_incremental_s"] = builds[0].seconds
        result["served_incremental_s"] = builds[1].seconds
        result["served_incremental_models_s"] = model_seconds(served_target, since=builds[1].started_at)
        idle = Step("server: build with nothing new", served_cmd, served_env)
        result["served_idle_s"], result["served_idle_models_s"] = idle.seconds, model_seconds(served_target,
                                                                                          since=idle.started_at)
        check_answer("the builds through the server", expected, env, problems)
    finally:
        result["serve_peak_gib"] = memory.stop()
        stop_server(server, grace=90)  # `lakehouse serve` stops its JVM; killed, the JVM gets SIGTERM
    return result


def postgres_server(out: Path) -> postgres.PostgresInfo | None:
    """The bench's own PostgreSQL server (bench/out/postgres, a free port), or None when its
    server programs are not installed."""
    from lakehouse.ports import free_port

    try:
        postgres.bin_dir()
    except postgres.PostgresError as exc:
        print(f"[bench] no builds through a server: {exc} (make postgres-bin)", file=sys.stderr, flush=True)
        return None
    directory = out / "postgres"
    directory.mkdir(exist_ok=True)
    directory.chmod(0o755)  # as root the server runs as OS user postgres
    postgres.stop(directory)  # a server left by an interrupted run
    return postgres.start(port=free_port(), directory=directory)


def fresh_metastore(server: postgres.PostgresInfo, changes: int) -> dict[str, str]:
    """A new, empty metastore database for one scale's fresh lakehouse; its LAKEHOUSE_METASTORE_*."""
    database = f"bench_{changes}"
    postgres.drop_database(server, database)
    postgres.ensure_database(server, database)
    return postgres.metastore_env(server, database)


def create_topics(paths: list[Path], bootstrap: str) -> None:
    """Create the topics of kcat -J dumps, one partition each: the records of one table keep
    their order, as the source wrote them."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topics = set()
    for path in paths:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                topics.add(line[10:line.index('"', 10)])  # '{"topic":"<name>"', as write_kcat puts it
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=1)
                                       for t in sorted(topics)]).values():
        future.result()


class KeptLog(logging.Handler):
    """librdkafka's log lines, kept instead of printed, for a failure's message.

    Why: a broker that has just started answers an idempotent producer's first request with
    "Coordinator load in progress"; librdkafka prints that as a warning on stderr, amid the
    bench's progress, and retries until the broker is ready. Only a produce that fails needs
    them."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.logger = logging.getLogger(f"bench.librdkafka.{name}.{id(self):x}")  # one per produce
        self.logger.propagate = False
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def produce(path: Path, bootstrap: str, create: bool = True, flush_s: float = 600) -> tuple[int, float]:
    """Produce every record of a kcat -J dump, in file order (its topics created first unless
    ``create`` is false); returns (records, seconds). Raises KafkaException when a record is
    not delivered, or still queued ``flush_s`` seconds after the last was handed over."""
    from confluent_kafka import KafkaException, Producer

    started = time.monotonic()
    if create:
        create_topics([path], bootstrap)
    failures: list[str] = []

    def delivered(err, _msg) -> None:  # noqa: ANN001 - confluent_kafka's callback signature
        if err is not None:
            failures.append(str(err))

    log = KeptLog(path.name)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 500_000, "queue.buffering.max.kbytes": 1_048_576,
                         "compression.type": "lz4", "enable.idempotence": True, "on_delivery": delivered,
                         "logger": log.logger})
    count = 0
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            rec = json.loads(line)
            key = rec["key"].encode() if rec["key"] is not None else None
            value = rec["payload"].encode() if rec["payload"] is not None else None
            while True:
                try:
                    # no timestamp=rec["ts"]: the broker's 7-day retention would delete records
                    # stamped with the dump's 2023 clock at once (offsets out of range); now it is
                    producer.produce(rec["topic"], value, key)
                    break
                except BufferError:
                    producer.poll(0.2)  # the local queue is full: let deliveries drain it
            count += 1
            if count % 1000 == 0:
                producer.poll(0)  # serve delivery callbacks as we go, not all at the end
    queued = producer.flush(flush_s)
    if queued != 0 or failures:
        raise KafkaException(f"{path}: {len(failures)} records not delivered, e.g. {failures[:3]}, "
                             f"and {queued} still queued after {flush_s:g} s; librdkafka's last words: "
                             f"{log.lines[-5:]}")
    return count, time.monotonic() - started


def kafka_landing(first_file: Path, counts: dict[str, int], changes: int, out: Path, problems: list[str]) -> dict:
    """Produce the records to the local broker, then time `lakehouse ingest --bootstrap-servers`
    of every topic into a fresh lakehouse, twice.

    The first landing is the broker's first read of the topics: a broker started a minute ago,
    on the same two cores, that has only taken writes (its fetch path cold), and so slower than
    the next landing from the same broker.
    The second, into another fresh lakehouse by another process, reads from a broker that has
    served the topics once, as a running cluster's broker has: the goal's figure. Both are
    reported and both are checked, and the driver's peak is the larger one's.
    """
    with local_broker(out / "kafka") as info:
        produced, produce_s = produce(first_file, info.bootstrap_servers)
        print(f"[bench] produced {produced:,} records in {produce_s:.1f}s", file=sys.stderr, flush=True)
        root = out / f"lakehouse-kafka-{changes}"
        env = dict(os.environ, LAKEHOUSE_DIR=str(root))
        landings = []
        for name in ("land from Kafka, the broker's first read", "land from Kafka"):
            shutil.rmtree(root, ignore_errors=True)
            landings.append(land(name, ["--bootstrap-servers", info.bootstrap_servers,
                                        "--topic-pattern", "bench[.].*"], counts, env, problems))
        cold, landed = landings
        return {"kafka_produce_s": produce_s, "land_kafka": landed, "land_kafka_s": landed["s"],
                "land_kafka_records_per_s": landed["records_per_s"],
                "land_kafka_first_read_s": cold["s"], "land_kafka_first_read_records_per_s": cold["records_per_s"],
                "land_kafka_peak_gib": max(cold["peak_gib"], landed["peak_gib"])}


@contextlib.contextmanager
def local_broker(directory: Path) -> Iterator[broker.BrokerInfo]:
    """A fresh local Kafka broker in ``directory`` on a free port (its BrokerInfo), stopped and
    removed afterwards."""
    from lakehouse.ports import free_port

    shutil.rmtree(directory, ignore_errors=True)
    info = broker.start(port=free_port(), directory=directory)
    try:
        yield info
    finally:
        broker.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


#: The following loader's --build-every (seconds): the next build comes due this long after the
#: last one ended, by which time an increment produced right after it must have landed (it
#: lands in up to three micro-batches, and a shorter interval let a build start between them).
FOLLOW_BUILD_EVERY = 20


def follow_builds(source: generate.Source, increment: int, offsets: dict, env: dict[str, str],
                  out: Path, changes: int, problems: list[str]) -> dict:
    """Builds of a following loader: ``lakehouse ingest --follow --build``, the loader and its
    builds in one process and Spark session, as a trickle from Kafka runs for days.

    Two more 1% increments, on topics of their own (generate.FOLLOW_PREFIX), in a broker of
    their own. The loader starts on the empty topics; its first build, one --build-every after
    its start, finds nothing new (dbt's first run in the process). Each increment is produced
    once the build before it is done, lands within seconds (--trigger-interval 2 seconds), and
    the next build, FOLLOW_BUILD_EVERY seconds after the one before it ended, takes all of it
    (checked: _check_whole_increment): the second is the steady state. The builds' seconds are
    those the loader prints. Then SIGINT (Ctrl-C), the loader's summary and the answer check.
    """
    files = []
    for n in (4, 5):
        path = out / f"more{n}-{changes}.jsonl"
        files.append((path, generate.write_kcat(path, source.changes(increment), offsets, generate.FOLLOW_PREFIX)))
    expected = source.live_counts()
    log_out, log_err = out / f"follow-{changes}.out", out / f"follow-{changes}.err"
    result: dict = {}
    with local_broker(out / "kafka-follow") as info:
        create_topics([path for path, _ in files], info.bootstrap_servers)
        build_args = shlex.join(["--exclude", "resource_type:test", "--vars", generate.build_vars()])
        command = [str(BIN / "lakehouse"), "ingest", "--bootstrap-servers", info.bootstrap_servers,
                   "--topic-pattern", f"{generate.FOLLOW_PREFIX}[.].*", "--follow", "--trigger-interval",
                   "2 seconds", "--build", "--build-every", str(FOLLOW_BUILD_EVERY), "--build-args", build_args]
        print(f"[bench] following loader: lakehouse ingest --follow --build ({info.bootstrap_servers}) ...",
              file=sys.stderr, flush=True)
        with log_out.open("wb") as stdout, log_err.open("wb") as stderr:
            loader = subprocess.Popen(command, env=env, cwd=PROJECT, stdin=subprocess.DEVNULL,
                                      stdout=stdout, stderr=stderr)
        memory = PeakMemory(loader.pid)
        try:
            builds = [_followed_build(1, loader, log_err)]
            last_started = time.time()
            produced = 0
            for n, (path, counts) in enumerate(files, start=2):
                produce(path, info.bootstrap_servers, create=False)
                produced += sum(counts.values())
                last_started = time.time()
                builds.append(_followed_build(n, loader, log_err))
                _check_whole_increment(n, produced, log_err, problems)
            loader.send_signal(signal.SIGINT)
            status = loader.wait(180)
        finally:
            if loader.poll() is None:
                loader.kill()
            result["follow_peak_gib"] = memory.stop()
    landed = re.search(r"landed (\d+),", log_out.read_text(errors="replace"))
    records = sum(sum(counts.values()) for _, counts in files)
    if status != 0 or landed is None or int(landed.group(1)) != records:
        problems.append(f"following loader: exit {status}, landed {landed.group(1) if landed else '?'} of {records}")
    check_answer("the following loader's builds", expected, env, problems)
    result.update({"follow_warmup_s": builds[0], "follow_first_incremental_s": builds[1],
                   "follow_incremental_s": builds[2],
                   "follow_incremental_models_s": model_seconds(since=last_started)})
    return result


def _check_whole_increment(n: int, produced: int, log: Path, problems: list[str]) -> None:
    """Whether the following loader's build ``n`` started with every record produced before it
    landed: one that started halfway through an increment's landing measured part of it, and
    the answer check after it finds the rest missing (on a slow host an increment lands in
    several micro-batches, and the build may come due between them)."""
    started = re.search(rf"\[lakehouse\] build {n}: (\d+) records landed by this loader so far",
                        log.read_text(errors="replace"))
    if started is None or int(started.group(1)) != produced:
        landed = started.group(1) if started else "?"
        problems.append(f"following loader: build {n} started with {landed} of the {produced} records produced "
                        f"before it landed: it measured part of its increment (raise FOLLOW_BUILD_EVERY)")


def _followed_build(n: int, loader: subprocess.Popen, log: Path, timeout: float = 900) -> float:
    """Wait for the following loader's build ``n``; its seconds as the loader printed them."""
    done = re.compile(rf"\[lakehouse\] build {n}: done in ([\d.]+)s")
    failed = re.compile(rf"\[lakehouse\] build {n} (failed|raised)")
    started = time.monotonic()
    while True:
        text = log.read_text(errors="replace")
        if (match := done.search(text)) is not None:
            print(f"[bench] following loader: build {n}: {float(match.group(1)):.1f}s", file=sys.stderr, flush=True)
            return float(match.group(1))
        if failed.search(text) or loader.poll() is not None or time.monotonic() - started > timeout:
            raise SystemExit(f"[bench] following loader: no build {n} (exit {loader.poll()}):\n{text[-3000:]}")
        time.sleep(0.2)


def parse_project() -> float:
    """dbt's parse of the project, once, untimed in the builds: seconds.

    dbt parses a project in full the first time a checkout runs it (no target/manifest.json
    yet), and every later command parses only what changed. Without this, the
    first scale's first build alone paid it on a fresh clone, and its figure was not comparable
    with the other scales'. A user pays it once, at the first dbt command of a checkout.
    """
    step = Step("dbt parse of the project", [str(BIN / "dbt"), "parse", "--profiles-dir", str(PROJECT / "profiles"),
                                             "--project-dir", str(PROJECT), "--vars", generate.build_vars()],
                os.environ.copy())
    return step.seconds


# A fixed single-threaded loop, timed before the scales: the same code on every machine, so it
# says how fast this one is. Hosts of one size can differ widely in speed from one session to
# the next, which moves every figure by as much: compare figures of two runs only with their
# yardsticks, and the ratios within one run.
YARDSTICK_LOOP = 10_000_000


def yardstick_seconds(rounds: int = 3, loop: int = YARDSTICK_LOOP) -> float:
    """The fastest of ``rounds`` timings of a plain Python loop of ``loop`` additions: seconds.

    The fastest, not the mean: a round another process slows only ever takes longer.
    """
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        total = 0
        for i in range(loop):
            total += i
        best = min(best, time.perf_counter() - started)
        assert total == loop * (loop - 1) // 2
    return best


def cpu_model() -> tuple[str, float | None]:
    """The processor's name and clock (MHz) as /proc/cpuinfo gives them; ("?", None) elsewhere."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "?", None
    # the last processor's fields
    fields = {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in lines if ":" in line)}
    try:
        mhz = float(fields["cpu MHz"])
    except (KeyError, ValueError):
        mhz = None
    return fields.get("model name", "?"), mhz


def machine() -> dict:
    """What the figures were measured on, with the yardstick that says how fast it is."""
    from importlib import metadata

    memory_kib = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal")), 0)
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    try:
        java_version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    except (OSError, IndexError):
        java_version = "?"
    model, mhz = cpu_model()
    return {
        "cpus": os.cpu_count(), "memory_gib": round(memory_kib / 1024 / 1024, 1),
        "cpu_model": model, "cpu_mhz": mhz, "yardstick_s": round(yardstick_seconds(), 3),
        "platform": platform.platform(), "python": platform.python_version(), "java": java_version,
        "spark": metadata.version("pyspark"), "delta": metadata.version("delta-spark"),
        "dbt": metadata.version("dbt-core"),
        "driver_memory": os.environ.get("LAKEHOUSE_DRIVER_MEMORY", "2800m (default)"),
    }


def node_seconds(since: float) -> dict[str, float]:
    """Seconds per node of the last dbt build, data tests summed into one figure ("data tests"),
    as `dbt build` runs them (:func:`run_results`)."""
    results = run_results(since=since)
    if not results:
        return {}
    seconds: dict[str, float] = {"data tests": 0.0}
    for r in results:
        kind, name = r["unique_id"].split(".", 1)[0], r["unique_id"].rsplit(".", 1)[-1]
        if kind == "test":
            seconds["data tests"] += r["execution_time"]
        elif kind in ("model", "seed"):
            seconds[name] = r["execution_time"]
    return {name: round(value, 1) for name, value in seconds.items()}


def wide_build(name: str, vars_json: str, env: dict[str, str], expected: dict[str, int], problems: list[str]) -> dict:
    """One `lakehouse build` as a user runs it (models and data tests), timed, its nodes, its answer checked."""
    step = Step(name, [str(BIN / "lakehouse"), "build", "--vars", vars_json], env, check=False)
    if step.returncode != 0:
        problems.append(f"{name} failed: " + "; ".join(failure_lines(step.out)))
    check_answer(name, expected, env, problems)
    return {"s": step.seconds, "nodes_s": node_seconds(step.started_at), "peak_gib": step.peak_gib}


def wide_scenario(changes: int, tables: int, formats: tuple[str, ...], out: Path, label: str,
                  increments: tuple[int, ...]) -> dict:
    """The shape users meet first: many tables over many formats, small increments, `lakehouse
    build` with its data tests. A first load of ``changes`` over ``tables`` tables of ``formats``,
    then one increment of each size in ``increments`` (changes), each landed and built as its own
    processes; after the first increment a build with nothing new and one `lakehouse sql` query
    (the fixed costs an increment's build is judged against)."""
    root = out / f"lakehouse-{label}"
    shutil.rmtree(root, ignore_errors=True)
    env = dict(os.environ, LAKEHOUSE_DIR=str(root))
    problems: list[str] = []
    source, offsets = generate.Source(tables, seed=1, formats=formats), {}
    vars_json = generate.build_vars(formats)
    result: dict = {"label": label, "changes": changes, "tables": tables, "formats": len(formats)}
    first_file = out / f"{label}-first.jsonl"
    counts = generate.write_kcat(first_file, source.changes(changes), offsets)
    result["records"] = sum(counts.values())
    result["land_first"] = land(f"{label}: land the first load", ["--from-file", str(first_file)], counts, env,
                                problems)
    result["first_build"] = wide_build(f"{label}: first build", vars_json, env, source.live_counts(), problems)
    for size in increments:
        path = out / f"{label}-more-{size}.jsonl"
        counts = generate.write_kcat(path, source.changes(size), offsets)
        land(f"{label}: land {size:,} more changes", ["--from-file", str(path)], counts, env, problems)
        result[f"increment_{size}"] = wide_build(f"{label}: build after {size:,} more changes", vars_json, env,
                                                 source.live_counts(), problems)
        result[f"increment_{size}"]["records"] = sum(counts.values())
        if size == increments[0]:
            result["idle_build"] = wide_build(f"{label}: build with nothing new", vars_json, env,
                                              source.live_counts(), problems)
            query = Step(f"{label}: one query", [str(BIN / "lakehouse"), "sql",
                                                 "select count(*) from gold.cdc_current_state"], env)
            result["query_s"] = query.seconds
    result["problems"] = problems
    return result


def wide_table(wide: dict, narrow: dict | None) -> str:
    """The wide scenario's figures as Markdown: each build with its data tests, the issue's ratios."""
    small = min(int(k.split("_")[1]) for k in wide if k.startswith("increment_"))
    inc, idle, query = wide[f"increment_{small}"]["s"], wide["idle_build"]["s"], wide["query_s"]
    lines = [f"wide: {wide['changes']:,} changes ({wide['records']:,} records) over {wide['tables']} tables "
             f"of {wide['formats']} formats, each build `lakehouse build` with its data tests\n",
             "| measure | seconds |", "| --- | --- |",
             f"| land the first load | {wide['land_first']['s']:.1f} |",
             f"| first build | {wide['first_build']['s']:.1f} |"]
    lines += [f"| build after {int(k.split('_')[1]):,} more changes ({wide[k]['records']:,} records) | "
              f"{wide[k]['s']:.1f} |" for k in wide if k.startswith("increment_")]
    lines += [f"| build with nothing new | {idle:.1f} |", f"| one `lakehouse sql` query, its process | {query:.1f} |",
              f"| {small:,}-change build / nothing new | {inc / idle:.2f}x |",
              f"| {small:,}-change build / one query | {inc / query:.2f}x |",
              f"| nothing new / one query | {idle / query:.2f}x |"]
    if narrow is not None:
        narrow_inc = narrow[f"increment_{small}"]["s"]
        lines.append(f"| {small:,}-change build / the same with {narrow['tables']} tables of {narrow['formats']} "
                     f"format ({narrow_inc:.1f} s) | {inc / narrow_inc:.2f}x |")
    lines.append(f"| answer | {'WRONG' if wide['problems'] or (narrow or {}).get('problems') else 'correct'} |")
    builds = [("first", wide["first_build"])] + [
        (f"+{int(k.split('_')[1]):,}", wide[k]) for k in wide if k.startswith("increment_")]
    builds.append(("nothing new", wide["idle_build"]))
    first = wide["first_build"]["nodes_s"]
    nodes = sorted({n for _, b in builds for n in b["nodes_s"]}, key=lambda n: -first.get(n, 0))
    lines += ["\nseconds per dbt node:\n", "| node | " + " | ".join(name for name, _ in builds) + " |",
              "| --- |" + " --- |" * len(builds)]
    lines += [f"| {n} | " + " | ".join(f"{b['nodes_s'].get(n, 0):.1f}" for _, b in builds) + " |" for n in nodes]
    return "\n".join(lines)


def table(results: list[dict], summary: dict) -> str:
    """The figures as a Markdown table."""
    rows = [
        ("changes (records)", lambda r: f"{r['changes']:,} ({r['records']:,})"),
        ("land from file (records/s)", "land_file_records_per_s", "{:,.0f}"),
        ("land from Kafka (records/s)", "land_kafka_records_per_s", "{:,.0f}"),
        ("land from Kafka, the broker's first read (records/s)", "land_kafka_first_read_records_per_s", "{:,.0f}"),
        ("first build (s)", "first_build_s", "{:.1f}"),
        ("first build (changes/s)", "first_build_changes_per_s", "{:,.0f}"),
        ("data tests of the first build (s)", "first_test_s", "{:.1f}"),
        ("floor: plain Spark, query (s)", "floor_query_s", "{:.1f}"),
        ("floor: plain Spark, process (s)", "floor_process_s", "{:.1f}"),
        ("floor: its two runs, before the first build / after its data tests (s)",
         lambda r: " / ".join(f"{seconds:.1f}" for seconds in r["floor_runs_s"]) if "floor_runs_s" in r else "-"),
        ("first build / floor (process)", "first_build_vs_floor", "{:.2f}x"),
        ("incremental build after 1% (s)", "incremental_build_s", "{:.1f}"),
        ("incremental / first build", "incremental_vs_first", "{:.1%}"),
        ("build with nothing new (s)", "idle_build_s", "{:.1f}"),
        ("incremental above that (s)", "incremental_above_idle_s", "{:.1f}"),
        ("land 1% and build: two processes / one (`ingest --build`) (s)",
         lambda r: f"{r['land_and_build_separately_s']:.1f} / {r['land_and_build_s']:.1f}"
         if "land_and_build_s" in r else "-"),
        ("one process: its build after the landing (s)", "land_and_build_build_s", "{:.1f}"),
        ("hand-written job (bench/handwritten.py): first load / 1% increment, each its own process (s)",
         lambda r: f"{r['handwritten_first_s']:.1f} / {r['handwritten_increment_s']:.1f}"
         if "handwritten_first_s" in r else "-"),
        ("first load (land + build) / hand-written", "first_load_vs_handwritten", "{:.2f}x"),
        ("1% increment (`ingest --build`, one process) / hand-written", "increment_vs_handwritten", "{:.2f}x"),
        ("through the server: start (s)", "serve_start_s", "{:.1f}"),
        ("through the server: its first build, nothing new (s)", "served_warmup_s", "{:.1f}"),
        ("through the server: incremental after 1%, first / next (s)",
         lambda r: f"{r['served_first_incremental_s']:.1f} / {r['served_incremental_s']:.1f}"
         if "served_incremental_s" in r else "-"),
        ("through the server: incremental / first build", "served_incremental_vs_first", "{:.1%}"),
        ("through the server: build with nothing new (s)", "served_idle_s", "{:.1f}"),
        ("following loader (`ingest --follow --build`): its first build, nothing new (s)",
         "follow_warmup_s", "{:.1f}"),
        ("following loader: incremental after 1%, first / next (s)",
         lambda r: f"{r['follow_first_incremental_s']:.1f} / {r['follow_incremental_s']:.1f}"
         if "follow_incremental_s" in r else "-"),
        ("following loader: incremental / first build", "follow_incremental_vs_first", "{:.1%}"),
        ("incremental after 1% that settles the history's closers, its own process (s)",
         "settling_build_s", "{:.1f}"),
        ("its history node / the incremental build's (s)",
         lambda r: f"{r['settling_build_models_s'].get('cdc_history_versions', 0):.1f} / "
         f"{r['incremental_build_models_s'].get('cdc_history_versions', 0):.1f}" if "settling_build_s" in r else "-"),
        ("live rows: gold / floor / expected",
         lambda r: f"{r['live_rows_gold']:,} / {r['live_rows_floor']:,} / {r['live_rows_expected']:,}"),
        ("driver peak: land from file (GiB)", "land_file_peak_gib", "{:.2f}"),
        ("driver peak: land from Kafka (GiB)", "land_kafka_peak_gib", "{:.2f}"),
        ("driver peak: first build (GiB)", "first_build_peak_gib", "{:.2f}"),
        ("driver peak: data tests (GiB)", "first_test_peak_gib", "{:.2f}"),
        ("driver peak: floor (GiB)", "floor_peak_gib", "{:.2f}"),
        ("driver peak: incremental build (GiB)", "incremental_build_peak_gib", "{:.2f}"),
        ("driver peak: the server (GiB)", "serve_peak_gib", "{:.2f}"),
        ("driver peak: following loader (GiB)", "follow_peak_gib", "{:.2f}"),
        ("answer", lambda r: "WRONG" if r["problems"] else "correct"),
    ]
    host = summary.get("machine", {})
    lines = []
    if "yardstick_s" in host:
        clock = f" at {host['cpu_mhz']:,.0f} MHz" if host.get("cpu_mhz") else ""
        lines += [f"machine: {host.get('cpus')} x {host.get('cpu_model', '?')}{clock}, "
                  f"{host.get('memory_gib')} GiB; yardstick (a fixed Python loop, fastest of 3): "
                  f"{host['yardstick_s']:.2f} s\n"]
    lines += ["| measure | " + " | ".join(f"{r['changes']:,}" for r in results) + " |",
             "| --- |" + " --- |" * len(results)]
    for label, key, *fmt in rows:
        cells = [key(r) if callable(key) else fmt[0].format(r[key]) if key in r else "-" for r in results]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if "incremental_largest_vs_smallest" in summary:
        lines.append(f"\nincremental build at {results[-1]['changes']:,} vs {results[0]['changes']:,} changes "
                     f"of history: {summary['incremental_largest_vs_smallest']:.2f}x")
    if "served_incremental_largest_vs_smallest" in summary:
        lines.append(f"through the server: {summary['served_incremental_largest_vs_smallest']:.2f}x")
    if "follow_incremental_largest_vs_smallest" in summary:
        lines.append(f"following loader: {summary['follow_incremental_largest_vs_smallest']:.2f}x")
    if "dbt_parse_s" in summary:
        lines.append(f"dbt's parse of the project, once before the scales (untimed in the builds): "
                     f"{summary['dbt_parse_s']:.1f} s")
    last = results[-1]
    first, inc = last.get("first_build_models_s", {}), last.get("incremental_build_models_s", {})
    idle = last.get("idle_build_models_s", {})
    served, served_idle = last.get("served_incremental_models_s", {}), last.get("served_idle_models_s", {})
    followed = last.get("follow_incremental_models_s", {})
    if first:
        lines += [f"\nwhere the build time goes at {last['changes']:,} changes (seconds per dbt node):\n",
                  "| node | first build | incremental | nothing new | served: incremental | served: nothing new "
                  "| following: incremental |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for node in sorted(first, key=lambda n: -first[n]):
            cells = [d.get(node, 0) for d in (first, inc, idle, served, served_idle, followed)]
            lines.append(f"| {node} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes to generate (default 1,000,000)")
    parser.add_argument("--scales", help="comma-separated change counts, e.g. 1000000,2000000,4000000")
    parser.add_argument("--tables", type=int, help="source tables (default 50; with --wide 500)")
    parser.add_argument("--no-kafka", action="store_true", help="skip landing through the local broker")
    parser.add_argument("--no-serve", action="store_true",
                        help="skip the builds through lakehouse serve (and the PostgreSQL metastore they need)")
    parser.add_argument("--out", type=Path, default=BENCH / "out", help="work folder (default bench/out)")
    parser.add_argument("--wide", action="store_true",
                        help="the wide scenario instead: --changes (default 1,000,000) over --tables (default 500) "
                             "tables of every format the generator writes, increments of 1,000 changes and of a "
                             "tenth of the first load, each build with its data tests; and the same first load "
                             "over 50 tables of debezium-json with its 1,000-change increment, for comparison")
    args = parser.parse_args()
    out = args.out.resolve()  # LAKEHOUSE_DIR must not depend on the steps' working directory
    out.mkdir(parents=True, exist_ok=True)
    if args.wide:
        wide_main(args.changes, args.tables or 500, out)
        return
    scales = sorted(int(s) for s in args.scales.split(",")) if args.scales else [args.changes]
    summary: dict = {"machine": machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "results": []}
    summary["dbt_parse_s"] = parse_project()
    pg = None if args.no_serve else postgres_server(out)
    summary["machine"]["metastore"] = "PostgreSQL (bench/out/postgres)" if pg else "Derby (embedded)"
    try:
        for n in scales:
            metastore = fresh_metastore(pg, n) if pg else None
            summary["results"].append(run_scale(n, args.tables or 50, not args.no_kafka, out, metastore))
            (out / "summary.json").write_text(json.dumps(summary, indent=2))  # a long run keeps what it has
    finally:
        if pg:
            postgres.stop(Path(pg.directory))
    results = summary["results"]
    if len(results) > 1:
        summary["incremental_largest_vs_smallest"] = (
            results[-1]["incremental_build_s"] / results[0]["incremental_build_s"])
        if "served_incremental_s" in results[0]:
            summary["served_incremental_largest_vs_smallest"] = (
                results[-1]["served_incremental_s"] / results[0]["served_incremental_s"])
        if "follow_incremental_s" in results[0]:
            summary["follow_incremental_largest_vs_smallest"] = (
                results[-1]["follow_incremental_s"] / results[0]["follow_incremental_s"])
    problems = [f"{r['changes']:,} changes: {p}" for r in results for p in r["problems"]]
    summary["correct"] = not problems
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(table(results, summary))
    print(f"\nsummary: {out / 'summary.json'}")
    if problems:
        banner = "!" * 100
        print(f"\n{banner}\nTHE PIPELINE GAVE A WRONG ANSWER: these figures measure a broken build\n"
              + "\n".join(f"  - {p}" for p in problems) + f"\n{banner}", file=sys.stderr)
        sys.exit(1)


def wide_main(changes: int, tables: int, out: Path) -> None:
    """`bench/run.py --wide`: the wide scenario and its one-format comparison, one table, summary-wide.json.
    The increments are 1,000 changes and a tenth of the first load (100,000 of the default 1M)."""
    summary: dict = {"machine": machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    summary["dbt_parse_s"] = parse_project()
    increments = tuple(sorted({1_000, max(1, changes // 10)}))  # one build when the two sizes are one
    summary["wide"] = wide_scenario(changes, tables, generate.ALL_FORMATS, out, "wide", increments)
    (out / "summary-wide.json").write_text(json.dumps(summary, indent=2))
    summary["narrow"] = wide_scenario(changes, 50, ("debezium-json",), out, "narrow", increments[:1])
    (out / "summary-wide.json").write_text(json.dumps(summary, indent=2))
    print(wide_table(summary["wide"], summary["narrow"]))
    print(f"\nsummary: {out / 'summary-wide.json'}")
    problems = summary["wide"]["problems"] + summary["narrow"]["problems"]
    if problems:
        print("\nTHE PIPELINE GAVE A WRONG ANSWER:\n" + "\n".join(f"  - {p}" for p in problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
