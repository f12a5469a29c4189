"""A Derby metastore held by another process: the commands say so at once.

Derby lets one process at a time open the embedded metastore. A `lakehouse build`, `ingest` or
`sql` started while another process has it open (most often `lakehouse serve`) used to start a
Spark driver anyway, which Derby refused after ten retries of Hive's metastore client: some 45 s
and tens of thousands of lines of stack traces. They now check Derby's lock before starting a
JVM and exit 2 with what to do instead. Here the other process is this test process, whose
Spark session (the shared in-process lakehouse) has the metastore open.
"""

from __future__ import annotations

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
        (["sql", "select count(*) from bronze.kafka_records"], "query through it"),
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
