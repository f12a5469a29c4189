"""``lakehouse ingest ... --build``: land, then build in the same process and Spark session.

A cron-style trickle ran two commands, each starting a JVM, Spark, the metastore and (for the
build) dbt; with ``--build`` the build's first statement finds Spark up. The options that go
with it are checked before anything starts.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import BIN, PROJECT, CliLakehouse
from lakehouse.kafka_loader.builds import Builds
from lakehouse.kafka_loader.sink import Totals

SAMPLE = PROJECT / "samples" / "debezium_inventory.jsonl"


def test_ingest_then_build_in_one_process(tmp_path: Path) -> None:
    lh = CliLakehouse(tmp_path / "lakehouse")
    dbt_args = "--select +cdc_current_state --exclude-resource-type test --no-use-colors"
    run = lh.run("ingest", "--from-file", str(SAMPLE), "--format", "debezium-json", "--build", "--build-args", dbt_args)
    assert "landed 11, skipped 0" in run.stdout, run.stdout
    assert "Completed successfully" in run.stdout, run.stdout[-4000:]
    assert run.stderr.count("Setting default log level") == 1, run.stderr[-4000:]  # one JVM
    live = lh.sql_json("select source_table, pk from gold.cdc_current_state order by source_table, pk")
    assert [(row["source_table"], row["pk"]) for row in live] == [
        ("customers", '{"id":1001}'), ("customers", '{"id":1002}'), ("customers", '{"id":1005}'),
        ("products", '{"id":101}'), ("products", '{"id":102}'),
    ]  # fmt: skip


@pytest.mark.parametrize(("extra", "message"), [
    (["--build-args", "--select gold"], "--build-args and --build-every go with --build"),
    (["--build-every", "5"], "--build-args and --build-every go with --build"),
    (["--build", "--build-every", "5"], "--build-every goes with --follow"),
    (["--build", "--build-args", "--vars '{a: 1}"], "--build-args: No closing quotation"),
    (["--build", "--test-every", "600"], "--test-every goes with --follow --build"),
    (["--test-every", "600"], "--test-every goes with --follow --build"),
])  # fmt: skip
def test_build_options_are_checked_before_anything_starts(tmp_path: Path, extra: list[str], message: str) -> None:
    proc = subprocess.run([str(BIN / "lakehouse"), "ingest", "--from-file", str(SAMPLE), *extra],
                          env={"PATH": "/usr/bin:/bin", "LAKEHOUSE_DIR": str(tmp_path / "lh")},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr, proc.stderr
    assert not (tmp_path / "lh").exists()  # no Spark, no lakehouse folder


def test_following_builds_outlive_a_build_that_raises(capsys: pytest.CaptureFixture[str]) -> None:
    """``--follow --build``: a build that raises (not one whose node failed, which dbt reports
    as a status) is reported, and the loader goes on to build again once more records land."""
    totals = Totals()
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the gateway went away\n\tat py4j.Gateway.invoke(Gateway.java:1)")
        return 0

    builds = Builds(build, 0.2, totals)
    assert not builds.due()  # the first build one interval after the start
    time.sleep(0.25)
    assert builds.due()
    builds.run()
    assert (builds.count, builds.failed, builds.last_status) == (1, 1, 2)
    assert "build 1 raised RuntimeError: the gateway went away" in capsys.readouterr().err
    time.sleep(0.25)
    assert not builds.due()  # nothing landed since that build
    totals.landed = 7
    assert builds.due()
    builds.run()
    assert (builds.count, builds.failed, builds.last_status) == (2, 1, 0)
    assert builds.summary() == "builds: 2, 1 failed"


def test_following_tests_run_apart_from_the_builds_at_most_so_often(capsys: pytest.CaptureFixture[str]) -> None:
    """``--follow --build --test-every``: the data tests run after a build that passed, not after
    one that failed, then again only once the interval has gone by and a build has passed since;
    failed tests are reported, the loader goes on, and they give the exit status while the last
    build passed."""
    totals = Totals()
    build_status = [1, 0, 0, 0]
    test_status = [1, 0]

    builds = Builds(lambda: build_status.pop(0), 0.01, totals,
                    lambda: test_status.pop(0), 0.3)  # fmt: skip
    assert not builds.tests_due()  # nothing built yet
    time.sleep(0.02)
    builds.run()  # fails
    assert (builds.count, builds.failed) == (1, 1)
    assert not builds.tests_due()  # no test of a failed build

    totals.landed = 3
    time.sleep(0.02)
    builds.run()
    assert builds.tests_due()  # the first tests right after the first build that passed
    builds.run_tests()  # fail
    err = capsys.readouterr().err
    assert "tests 1: the data tests, after build 2" in err and "tests 1 failed (dbt exit 1" in err, err
    assert (builds.test_count, builds.tests_failed, builds.status) == (1, 1, 1)

    totals.landed = 5
    time.sleep(0.02)
    builds.run()
    assert not builds.tests_due()  # a build passed, but the interval has not gone by
    time.sleep(0.3)
    assert builds.tests_due()  # it has, and nothing needs to land for the tests to run
    builds.run_tests()
    assert "tests 2: passed in" in capsys.readouterr().err
    assert (builds.test_count, builds.tests_failed, builds.status) == (2, 1, 0)
    time.sleep(0.3)
    assert not builds.tests_due()  # no build since: nothing to test again
    assert builds.summary() == "builds: 3, 1 failed; tests: 2, 1 failed"


def test_following_loader_reads_bronze_ahead_of_a_build_only_while_idle(capsys: pytest.CaptureFixture[str]) -> None:
    """``--follow --build``: between batches and builds the loader reads bronze's new snapshot
    (``bronze.read_ahead``) once per landing, never while the stream is busy, not after a build
    that read it already; a read that fails is reported and the loader goes on."""
    totals = Totals()
    reads: list[int] = []

    def read_ahead() -> None:
        reads.append(totals.landed)
        if len(reads) == 2:
            raise RuntimeError("bronze is being rewritten\n\tat py4j.Gateway.invoke(Gateway.java:1)")

    builds = Builds(lambda: 0, 0.01, totals, read_ahead=read_ahead)
    builds.idle(stream_busy=False)
    assert reads == []  # nothing landed yet
    totals.landed = 10
    builds.idle(stream_busy=True)
    assert reads == []  # a batch runs, or Kafka holds more: the loader is catching up
    builds.idle(stream_busy=False)
    builds.idle(stream_busy=False)
    assert reads == [10]  # once per landing
    totals.landed = 25
    builds.idle(stream_busy=False)
    assert reads == [10, 25]
    assert "reading bronze ahead of the next build failed, the build will: RuntimeError: bronze is being rewritten" \
        in capsys.readouterr().err
    totals.landed = 30
    builds.idle(stream_busy=False)
    time.sleep(0.02)
    builds.run()
    assert "build 1: 30 records landed by this loader so far, bronze's snapshot read ahead" in capsys.readouterr().err
    totals.landed = 40
    time.sleep(0.02)
    builds.run()  # the build read bronze with all 40
    assert "build 2: 40 records landed by this loader so far\n" in capsys.readouterr().err
    builds.idle(stream_busy=False)
    assert reads == [10, 25, 30]
    totals.landed = 41  # landed during or after the build
    builds.idle(stream_busy=False)
    assert reads == [10, 25, 30, 41]
