"""A Derby metastore held by another process: the commands say so at once.

Derby lets one process at a time open the embedded metastore. A `lakehouse build`, `ingest` or
`sql` started while another process has it open (most often `lakehouse serve`) used to start a
Spark driver anyway, which Derby refused after ten retries of Hive's metastore client and tens
of thousands of lines of stack traces. They now check Derby's lock before starting a
JVM and exit 2 with what to do instead. Here the other process is this test process, whose
Spark session (the shared in-process lakehouse) has the metastore open.

A metastore found open is watched for a few seconds before it counts as busy, and each command
waits for its own driver's JVM to stop before it returns: that JVM held Derby's lock for a
moment after `lakehouse ingest` returned, and `lakehouse ingest ... && lakehouse build` failed
as busy.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BIN, PROJECT, InProcessLakehouse

SAMPLE = PROJECT / "samples" / "debezium_inventory.jsonl"


def _in_use_elsewhere(root: Path) -> bool:
    """``metastore_in_use`` asked from a process without a JVM of its own."""
    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from lakehouse.session import "
         "metastore_in_use; print(metastore_in_use(Path(sys.argv[1])))", str(root)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    return probe.stdout.strip() == "True"


def test_a_process_with_its_own_driver_is_not_busy(lakehouse: InProcessLakehouse) -> None:
    from lakehouse.session import metastore_in_use

    lakehouse.spark.sql("show databases").collect()  # the metastore is open in this process
    assert _in_use_elsewhere(lakehouse.root)
    # asked in the process whose JVM holds the lock: not asked at all (its own session is not
    # another process; the in-process lakehouse lands through the CLI's code), and the lock stays
    assert metastore_in_use(lakehouse.root) is False
    assert _in_use_elsewhere(lakehouse.root)


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        (["build", "--select", "cdc_op_codes"], "build through it: `lakehouse build --target thrift`"),
        (["ingest", "--from-file", str(SAMPLE), "--format", "debezium-json"], "LAKEHOUSE_METASTORE_URL"),
        (["sql", "select count(*) from bronze.kafka_records"], "Stop it first, or keep the metastore in PostgreSQL"),
    ],
)  # fmt: skip
def test_a_command_says_the_metastore_is_busy(lakehouse: InProcessLakehouse, command: list[str], hint: str) -> None:
    lakehouse.spark.sql("show databases").collect()
    env = dict(os.environ, LAKEHOUSE_DIR=str(lakehouse.root))
    run = subprocess.run([str(BIN / "lakehouse"), *command], env=env, cwd=PROJECT,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr[-4000:]
    assert f"{command[0]}: the Derby metastore of {lakehouse.root} is open in another process" in run.stderr, run.stderr
    assert hint in run.stderr, run.stderr
    # no Spark driver was started: no JVM output, no stack trace
    assert "Exception" not in run.stderr and "Setting default log level" not in run.stderr, run.stderr[-4000:]
    assert _in_use_elsewhere(lakehouse.root)


def _hold_lock(root: Path, seconds: float) -> subprocess.Popen[str]:
    """A process holding Derby's lock on ``root``'s metastore for ``seconds``, as a JVM that is
    still stopping does; returns once the lock is taken."""
    (root / "metastore_db").mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(float(sys.argv[2]))",
         str(root / "metastore_db" / "dbex.lck"), str(seconds)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _derby_env() -> dict[str, str]:
    """This environment without a metastore server's settings: the metastore is Derby."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LAKEHOUSE_METASTORE")}


def _busy_elsewhere(root: Path) -> tuple[bool, float]:
    """``derby_busy`` asked from a process without a JVM: (its answer, seconds it took)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from lakehouse.session import "
         "derby_busy; t = time.monotonic(); b = derby_busy(Path(sys.argv[1])); print(b, time.monotonic() - t)",
         str(root)],
        capture_output=True, text=True, timeout=60, env=_derby_env(),
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    answer, seconds = probe.stdout.split()
    return answer == "True", float(seconds)


def test_a_metastore_let_go_within_the_grace_is_not_busy(tmp_path: Path) -> None:
    # a driver JVM outlives its Python by about half a second while it stops: the next command
    # of a script waits for it instead of calling the metastore busy
    holder = _hold_lock(tmp_path, 1.0)
    busy, seconds = _busy_elsewhere(tmp_path)
    holder.wait(timeout=30)
    assert not busy
    assert 0.5 < seconds < 5


def test_a_metastore_held_past_the_grace_is_busy(tmp_path: Path) -> None:
    holder = _hold_lock(tmp_path, 30.0)
    try:
        busy, seconds = _busy_elsewhere(tmp_path)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert busy
    assert seconds < 10


def test_a_command_lets_go_of_the_metastore_before_it_returns(tmp_path: Path) -> None:
    # `lakehouse ingest ... && lakehouse build`: the ingest's JVM has let go of Derby when the
    # ingest returns (before, its JVM held the lock a moment longer)
    env = dict(_derby_env(), LAKEHOUSE_DIR=str(tmp_path))
    log = tmp_path / "ingest.log"
    with log.open("w") as out:  # to a file, as a script's log: a pipe would wait for the JVM too
        command = [str(BIN / "lakehouse"), "ingest", "--from-file", str(SAMPLE), "--format", "debezium-json"]
        run = subprocess.run(command, env=env, cwd=PROJECT, stdout=out, stderr=subprocess.STDOUT, timeout=300)
    assert run.returncode == 0, log.read_text()[-4000:]
    # asked at once, here (a probe process of its own would start too late to see it)
    fd = os.open(tmp_path / "metastore_db" / "dbex.lck", os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
