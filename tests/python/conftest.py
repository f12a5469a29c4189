"""Shared pytest fixtures: a lakehouse driven in-process, and one driven through the CLI.

Starting Spark costs seconds, so most tests share one in-process lakehouse
(:class:`InProcessLakehouse`): the loader code, dbt (through dbtRunner, whose ``session``
method picks up the running Spark session) and the queries run in the pytest process, and
each test starts from an empty lakehouse with :meth:`InProcessLakehouse.reset`. The end-to-end
tests run the real commands (``lakehouse ingest``, ``lakehouse build``, ``lakehouse sql``)
as subprocesses against their own temporary ``LAKEHOUSE_DIR`` with :class:`CliLakehouse`.

Under ``pytest -n`` (pytest-xdist, as ``make test`` runs it) each worker process has its own
Spark session and lakehouses, and its own dbt target and log folders (``DBT_TARGET_PATH``,
``DBT_LOG_PATH``, inherited by the CLI subprocesses): two dbt runs writing one ``target/``
would overwrite each other's manifest and compiled SQL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[2]
SHARED = PROJECT.parent / "shared"
BIN = Path(sys.executable).parent
sys.path.insert(0, str(Path(__file__).parent))

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # gw0, gw1, ... under pytest -n
if _WORKER:
    os.environ.setdefault("DBT_TARGET_PATH", str(PROJECT / "target" / f"pytest-{_WORKER}"))
    os.environ.setdefault("DBT_LOG_PATH", str(PROJECT / "logs" / f"pytest-{_WORKER}"))
#: Where this process's dbt runs write their compiled SQL and results.
DBT_TARGET = PROJECT / os.environ.get("DBT_TARGET_PATH", "target")


#: The test files that take minutes, longest first. They are collected first, so that under
#: ``pytest -n`` each worker starts on one and the short files fill in around them; in
#: collection order the longest one started late and ran alone at the end.
LONGEST_FIRST = (
    "test_real_postgres.py",
    "test_real_mariadb.py",
    "test_cli_end_to_end.py",
    "test_gold_history_increments.py",
    "test_formats_oms.py",
    "test_formats_dataworks.py",
    "test_bench_generate.py",
    "test_kafka_exactly_once.py",
    "test_formats_canal.py",
    "test_cluster.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files of :data:`LONGEST_FIRST` first, in that order (the rest keep theirs)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def needs_shared(*parts: str) -> Path:
    """The path under ../shared, or skip: the reference material is only beside CI's clone."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared (vendor documents, conformance samples) "
                    "is not beside this checkout")
    return path


class InProcessLakehouse:
    """One lakehouse in a temporary LAKEHOUSE_DIR, driven from inside the test process."""

    def __init__(self, root: Path) -> None:
        from lakehouse.session import get_spark

        self.root = root
        os.environ["LAKEHOUSE_DIR"] = str(root)
        self.spark = get_spark("lakehouse-tests", root)
        self._files = 0
        self._seeded = False

    def reset(self) -> None:
        """Drop every table: the next build starts from an empty lakehouse (whose
        meta.cdc_build_progress still holds the rows of the tables dropped, as a user's would
        after dropping silver and gold)."""
        for schema in ("gold", "silver", "bronze"):
            self.spark.sql(f"drop database if exists {schema} cascade")

    def ingest(self, lines: list[str], fmt: str | None = None, topic: str | None = None) -> None:
        """Land ``lines`` (kcat -J envelopes, or bare values with ``topic``) like the CLI does."""
        from lakehouse import cli

        self._files += 1
        path = self.root / f"batch-{self._files}.jsonl"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        args = ["ingest", "--from-file", str(path)]
        args += ["--format", fmt] if fmt else []
        args += ["--topic", topic] if topic else []
        assert cli.main(args) == 0

    def build(self, *args: str, tests: bool = True, project: Path = PROJECT) -> None:
        """``dbt build`` in-process; fails the test with dbt's own message when a node fails.

        A dbt build of this project is dominated by fixed costs on test-sized data (seeds and
        some fifty data tests), so the seeds are loaded once per session (``reset`` keeps them)
        and ``tests=False`` runs the models only, for the intermediate builds of a scenario
        whose final build runs the data tests. Only a build without ``--select`` loads every
        seed: a selected one leaves the session unseeded, whatever order the tests run in.
        """
        command = ["build"] if tests else ["run"]
        if self._seeded and tests:
            command += ["--exclude", "resource_type:seed"]
        if not self._seeded:
            command = ["build"] if tests else ["build", "--exclude", "resource_type:test"]
        self.dbt(*command, *args, project=project)
        self._seeded = self._seeded or "--select" not in args

    def logged_build(self, log_dir: Path, *args: str, project: Path = PROJECT) -> str:
        """``build(*args, tests=False)`` with dbt's debug log kept apart in ``log_dir``: its text.

        The log holds every statement the build sent, so a test can check what a build ran and
        what it left out. Whitespace is folded, so a statement reads as one line.
        """
        self.build(*args, "--log-path", str(log_dir), tests=False, project=project)
        return " ".join((log_dir / "dbt.log").read_text(encoding="utf-8").split())

    def dbt(self, *args: str, project: Path = PROJECT) -> None:
        """Any dbt command in-process, against ``project``; fails the test when a node fails.

        A copy of the project (:func:`copy_project`) keeps its own target folder: dbt's partial
        parsing would otherwise hand the next build of the project the copy's manifest, whose
        seeds are read from the copy's files.
        """
        from dbt.cli.main import dbtRunner
        from lakehouse.dbt_session import with_threads
        from lakehouse.dbt_spark_errors import shorten_java_errors

        shorten_java_errors()  # as `lakehouse build` runs dbt, in as many threads
        own_target = ["--target-path", str(project / "target")] if project != PROJECT else []
        result = dbtRunner().invoke([
            *with_threads(list(args)), "--profiles-dir", str(PROJECT / "profiles"),
            "--project-dir", str(project), "--quiet", *own_target,
        ])
        failures = [
            f"{r.node.unique_id}: {r.status}: {r.message}"
            for r in (result.result or []) if str(r.status) in ("error", "fail")
        ]
        assert result.success and not failures, "\n".join(failures) or str(result.exception)

    def rows(self, query: str) -> list[dict[str, Any]]:
        """The query's rows as dicts."""
        return [r.asDict(recursive=True) for r in self.spark.sql(query).collect()]

    def progress(self, table: str, version: int | None = None) -> dict[str, Any] | None:
        """What the model recorded in meta.cdc_build_progress for ``version`` of its ``table``
        (default: the newest version), or None when no row describes that version. By version
        and commit time, as the models find it: :meth:`reset` drops the tables, not their rows,
        and a table made again counts its versions from 0 again."""
        history = self.rows(f"describe history {table}")
        commit = history[0] if version is None else next(c for c in history if c["version"] == version)
        rows = self.rows(
            f"select progress from meta.cdc_build_progress where model_table = '{table}' "
            f"and table_version = {commit['version']} and table_committed_at = '{commit['timestamp']}' "
            "order by recorded_at desc limit 1")
        return json.loads(rows[0]["progress"]) if rows else None

    def described(self, table: str) -> dict[str, str]:
        """``describe table extended``'s rows as {name: value} (Type, Created Time, View Schema Mode, ...)."""
        return {r["col_name"]: r["data_type"] for r in self.rows(f"describe table extended {table}")}

    def built_plan(self, layer: str, model: str) -> str:
        """Spark's physical plan of the query the last build compiled for ``models/<layer>/<model>``."""
        compiled = DBT_TARGET / "compiled" / "cdc_lakehouse" / "models" / layer / f"{model}.sql"
        return self.spark.sql(compiled.read_text("utf-8"))._jdf.queryExecution().executedPlan().toString()

    def current_state(self, table: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
        """gold.cdc_current_state as {(table, pk): row} with ``row`` JSON-decoded exactly."""
        where = f"where source_table = '{table}'" if table else ""
        return {
            (r["source_table"], r["pk"]): json.loads(r["row"], parse_float=str, parse_int=str)
            for r in self.rows(f"select source_table, pk, row from gold.cdc_current_state {where}")
        }


def copy_project(destination: Path) -> Path:
    """The dbt project's files copied to ``destination``, for a test that edits a seed: the
    checkout's own seeds stay as shipped for the tests running beside it."""
    shutil.copytree(PROJECT, destination, ignore=shutil.ignore_patterns(
        ".*", "target", "logs", "lakehouse", "bench", "docs", "jvm", "samples", "tests", "__pycache__"))
    return destination


@pytest.fixture(scope="session")
def _shared_lakehouse() -> Iterator[InProcessLakehouse]:
    with tempfile.TemporaryDirectory(prefix="lakehouse-test-") as tmp:
        yield InProcessLakehouse(Path(tmp))


@pytest.fixture
def lakehouse(_shared_lakehouse: InProcessLakehouse) -> InProcessLakehouse:
    """An empty in-process lakehouse (shared Spark session, tables dropped before the test)."""
    _shared_lakehouse.reset()
    return _shared_lakehouse


class CliLakehouse:
    """A lakehouse driven only through the user-facing commands, in a subprocess each."""

    def __init__(self, root: Path, cwd: Path = PROJECT) -> None:
        self.root = root
        self.cwd = cwd  # where the commands run: the checkout, or anywhere a user may be
        self.env = dict(os.environ, LAKEHOUSE_DIR=str(root))

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(BIN / "lakehouse"), *args], env=self.env, cwd=self.cwd,
            capture_output=True, text=True, timeout=3600,
        )
        assert proc.returncode == 0, f"lakehouse {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
        return proc

    def sql_json(self, query: str) -> list[dict[str, Any]]:
        out = self.run("sql", query, "--json").stdout
        return [json.loads(line, parse_float=str, parse_int=str) for line in out.splitlines() if line]
