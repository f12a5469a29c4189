"""The same project on a real Spark standalone cluster with a shared PostgreSQL metastore.

Only configuration changes (LAKEHOUSE_SPARK_MASTER, LAKEHOUSE_METASTORE_*): a PostgreSQL server
started by ``lakehouse postgres up`` (its own database per run), a master and two workers started
by ``lakehouse cluster up``, the bundled sample landed by ``lakehouse ingest`` as an application
of that master (executors on both workers), ``lakehouse serve`` running on the cluster, dbt's
``thrift`` target building through it, and gold read back with beeline equal to the gold of the
embedded default (local Spark, Derby) for the same input. While the server runs, a second
process (``lakehouse sql``) opens the same metastore and sees the same tables: with Derby it
could not. Everything started here is stopped in teardown, whatever happened.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BIN, PROJECT, InProcessLakehouse
from lakehouse.ports import free_port, free_ports
from serve_process import serve_process, wait_ready

SAMPLE = PROJECT / "samples" / "debezium_inventory.jsonl"
#: The live keys of the sample's inventory database: 1003 deleted, 1004 re-keyed to 1005.
LIVE_KEYS = [
    ("customers", '{"id":1001}'), ("customers", '{"id":1002}'), ("customers", '{"id":1005}'),
    ("products", '{"id":101}'), ("products", '{"id":102}'),
]  # fmt: skip
#: Every column of every gold row as one JSON text, so both sides compare whole rows exactly.
GOLD_ROWS = "select to_json(struct(*)) as r from gold.cdc_current_state order by r"
DBT_SELECT = ["--select", "+cdc_current_state", "--exclude-resource-type", "test"]
#: Small JVMs: the machine is shared (2 cores); each worker offers 1 core and 1g.
SMALL = {"LAKEHOUSE_DRIVER_MEMORY": "1g", "LAKEHOUSE_EXECUTOR_MEMORY": "768m", "LAKEHOUSE_EXECUTOR_CORES": "1"}


def _base_env() -> dict[str, str]:
    """This process's environment without LAKEHOUSE_* settings a developer may have exported.

    Plus C1-only JIT for every JVM started from here (drivers, daemons, executors via their
    worker, beeline): they live for minutes on tiny data, where C2's compilations cost more CPU
    than they ever save, and the machine has two shared cores.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEHOUSE_")}
    env["JAVA_TOOL_OPTIONS"] = f"{env.get('JAVA_TOOL_OPTIONS', '')} -XX:TieredStopAtLevel=1".strip()
    return env


def _lakehouse(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(BIN / "lakehouse"), *args], env=env, cwd=PROJECT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, f"lakehouse {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc


def _exports(stdout: str) -> dict[str, str]:
    """The ``export NAME=value`` lines ``lakehouse postgres up`` prints."""
    import shlex

    found = {}
    for line in stdout.splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            found[name] = shlex.split(value)[0]
    return found


@pytest.fixture(scope="module")
def metastore() -> Iterator[dict[str, Any]]:
    """A PostgreSQL server of its own (``lakehouse postgres up``) and a new database; the env to use it.

    Under /tmp, not pytest's tmp_path: as root the server runs as OS user ``postgres``, which
    cannot enter /tmp/pytest-of-root (mode 0700).
    """
    directory = Path(tempfile.mkdtemp(prefix="lakehouse-pg-"))
    directory.chmod(0o755)
    env = _base_env()
    database = f"metastore_{uuid.uuid4().hex[:12]}"
    try:
        up = _lakehouse("postgres", "up", "--dir", str(directory), "--port", str(free_port()),
                        "--database", database, env=env, timeout=180)
        settings = _exports(up.stdout)
        assert settings["LAKEHOUSE_METASTORE_URL"].endswith(f"/{database}"), up.stdout
        yield {"env": settings, "dir": directory, "database": database}
    finally:
        subprocess.run([str(BIN / "lakehouse"), "postgres", "down", "--dir", str(directory)], env=env,
                       capture_output=True, timeout=120)
        from lakehouse.local import postgres

        postgres.stop(directory)  # no-op when `down` worked; the safety net when it did not
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A master and two workers (1 core, 1g each) on free ports (``lakehouse cluster up``)."""
    directory = tmp_path_factory.mktemp("cluster")
    port, webui_port = free_ports(2)
    env = _base_env()
    try:
        up = _lakehouse(
            "cluster", "up", "--dir", str(directory), "--port", str(port), "--webui-port", str(webui_port),
            "--workers", "2", "--worker-cores", "1", "--worker-memory", "1g", env=env, timeout=300,
        )  # fmt: skip
        master_url = up.stdout.strip().splitlines()[-1]
        assert re.fullmatch(r"spark://127\.0\.0\.1:\d+", master_url), up.stdout
        yield {"master": master_url, "json": f"http://127.0.0.1:{webui_port}/json", "dir": directory}
    finally:
        subprocess.run([str(BIN / "lakehouse"), "cluster", "down", "--dir", str(directory)], env=env,
                       capture_output=True, timeout=180)
        from lakehouse.local import cluster

        cluster.stop(directory)  # no-op when `down` worked


def _master_state(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _beeline_rows(port: int, query: str, env: dict[str, str]) -> list[str]:
    """The single-column rows of ``query`` through the server, with the pyspark wheel's beeline."""
    import pyspark

    beeline = Path(pyspark.__file__).parent / "bin" / "beeline"
    done = subprocess.run(
        [str(beeline), "-u", f"jdbc:hive2://127.0.0.1:{port}/default", "--outputformat=tsv2", "--silent=true",
         "-e", query],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    lines = done.stdout.replace("\0", "").splitlines()
    header = next((i for i, line in enumerate(lines) if re.fullmatch(r"(?:.*> )?r", line)), None)
    assert header is not None, f"no header in beeline's output:\n{done.stdout}"
    return [line for line in lines[header + 1:] if line.strip()]


def _embedded_gold(lakehouse: InProcessLakehouse, tmp_path: Path) -> list[str]:
    """Gold of the embedded default (local Spark, Derby) for the sample, built in-process."""
    from dbt.cli.main import dbtRunner

    lakehouse.ingest(SAMPLE.read_text(encoding="utf-8").splitlines(), fmt="debezium-json")
    result = dbtRunner().invoke([
        "build", *DBT_SELECT, "--profiles-dir", str(PROJECT / "profiles"), "--project-dir", str(PROJECT),
        "--target-path", str(tmp_path / "embedded-target"), "--log-path", str(tmp_path / "embedded-logs"), "--quiet",
    ])  # fmt: skip
    assert result.success, str(result.exception or result.result)
    return [r["r"] for r in lakehouse.rows(GOLD_ROWS)]


def _registered(metastore: dict[str, Any]) -> set[str]:
    """The tables the PostgreSQL metastore database holds, as ``schema.table``."""
    from lakehouse.local import postgres

    info = postgres.status(metastore["dir"])
    assert info is not None, "the PostgreSQL server is not running"
    out = postgres.psql(info, '''select d."NAME" || '.' || t."TBL_NAME" from "TBLS" t join "DBS" d using ("DB_ID")''',
                        metastore["database"])
    return set(out.split())


def _keys(rows: list[str]) -> list[tuple[str, str]]:
    return [(json.loads(r)["source_table"], json.loads(r)["pk"]) for r in rows]


def test_cluster_with_postgres_metastore_builds_the_embedded_gold(
    metastore: dict[str, Any], spark_cluster: dict[str, Any], lakehouse: InProcessLakehouse, tmp_path: Path
) -> None:
    started = time.monotonic()

    def step(name: str) -> None:
        print(f"[test_cluster] {name}: {time.monotonic() - started:.0f}s", flush=True)

    root = tmp_path / "lakehouse"
    env = {**_base_env(), **SMALL, **metastore["env"], "LAKEHOUSE_DIR": str(root),
           "LAKEHOUSE_SPARK_MASTER": spark_cluster["master"]}  # fmt: skip

    # the loader, an application of the standalone master, runs while the embedded default builds
    # the expected gold in this process (both mostly wait on JVM starts: together is faster)
    ingest = subprocess.Popen(
        [str(BIN / "lakehouse"), "ingest", "--from-file", str(SAMPLE), "--format", "debezium-json"],
        env=env, cwd=PROJECT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        expected = _embedded_gold(lakehouse, tmp_path)
        step("embedded gold")
        landed, ingest_err = ingest.communicate(timeout=600)
    finally:
        if ingest.poll() is None:
            ingest.kill()  # its JVM exits when the Python side is gone
            ingest.wait()
    assert _keys(expected) == LIVE_KEYS, expected
    assert ingest.returncode == 0, f"lakehouse ingest on the cluster failed:\n{landed}\n{ingest_err[-4000:]}"
    landed_batch = re.search(r"read 11, landed 11, skipped 0 as already landed \(batch (\w+),", landed)
    assert landed_batch, landed
    batch = landed_batch.group(1)
    step("ingest on the cluster")
    state = _master_state(spark_cluster["json"])
    ingest_apps = [a for a in state["completedapps"] if a["name"] == "lakehouse-ingest"]
    assert len(ingest_apps) == 1 and ingest_apps[0]["state"] == "FINISHED", state["completedapps"]
    for n in (1, 2):
        work = spark_cluster["dir"] / "work" / f"worker-{n}" / ingest_apps[0]["id"]
        executors = [p.name for p in work.iterdir() if p.is_dir()] if work.is_dir() else []
        assert executors, f"no executor of the ingest ran on worker-{n} ({work})"
    # the tables are registered in PostgreSQL, not in a Derby database under LAKEHOUSE_DIR
    assert not (root / "metastore_db").exists()

    port = free_port()
    out, err = tmp_path / "serve.out", tmp_path / "serve.err"
    with serve_process(env, port, out, err) as server:
        wait_ready(server, out, err)
        step("serve ready")
        state = _master_state(spark_cluster["json"])
        serve_apps = [a for a in state["activeapps"] if a["name"].startswith("lakehouse-serve ")]
        assert len(serve_apps) == 1, state["activeapps"]
        assert [w["coresused"] for w in state["workers"] if w["state"] == "ALIVE"] == [1, 1], state["workers"]

        # meanwhile a second process opens the same metastore (Derby would refuse it): an analyst's
        # local session reads what the loader landed, while dbt builds through the server
        analyst_env = {k: v for k, v in env.items() if k != "LAKEHOUSE_SPARK_MASTER"}
        analyst = subprocess.Popen(
            [str(BIN / "lakehouse"), "sql", "select batch_id, count(*) as n from bronze.kafka_records group by 1",
             "--json"],
            env=analyst_env, cwd=PROJECT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            dbt = subprocess.run(
                [str(BIN / "dbt"), "build", "--profiles-dir", str(PROJECT / "profiles"), "--project-dir", str(PROJECT),
                 "--target", "thrift", "--no-use-colors", *DBT_SELECT,
                 "--target-path", str(tmp_path / "dbt-target"), "--log-path", str(tmp_path / "dbt-logs")],
                env=dict(env, LAKEHOUSE_THRIFT_PORT=str(port)), cwd=PROJECT, capture_output=True, text=True,
                timeout=900,
            )  # fmt: skip
            shared, analyst_err = analyst.communicate(timeout=600)
        finally:
            if analyst.poll() is None:
                analyst.kill()
                analyst.wait()
        assert dbt.returncode == 0 and "Completed successfully" in dbt.stdout, dbt.stdout[-4000:]
        assert re.search(r"OK created [a-z ]*model gold\.cdc_current_state", dbt.stdout), dbt.stdout[-4000:]
        step("dbt build --target thrift, lakehouse sql beside the server")
        assert analyst.returncode == 0, analyst_err[-4000:]
        assert [json.loads(line) for line in shared.splitlines() if line] == [{"batch_id": batch, "n": 11}], shared
        assert {"bronze.kafka_records", "silver.cdc_parsed", "gold.cdc_current_state"} <= _registered(metastore)

        assert _beeline_rows(port, GOLD_ROWS, env) == expected
        step("beeline")
        assert server.poll() is None, err.read_text()

        server.send_signal(signal.SIGTERM)
        assert server.wait(120) == 0, err.read_text()
    step("server stopped")
