"""``lakehouse build``: dbt in the command's own process on the local target (the Spark
session started beside dbt's start, lakehouse.dbt_session), dbt's command on other targets."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BIN
from lakehouse.dbt_session import target_of, with_target
from lakehouse.dbt_spark_errors import shorten_java_errors
from lakehouse.serve import running_server


@pytest.mark.parametrize(("args", "env", "target"), [
    (["build"], {}, "local"),
    (["build", "--select", "gold"], {"DBT_TARGET": "thrift"}, "thrift"),
    (["build", "--target", "thrift"], {}, "thrift"),
    (["build", "-t", "thrift", "--select", "gold"], {}, "thrift"),
    (["build", "--target=local"], {"DBT_TARGET": "thrift"}, "local"),
    # a value that only looks like the option is not one
    (["build", "--vars", "{target: thrift}"], {}, "local"),
])
def test_the_target_is_read_as_dbt_reads_it(args, env, target, monkeypatch) -> None:
    monkeypatch.delenv("DBT_TARGET", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert target_of(args) == target


def test_a_usage_error_exits_as_dbt_does(tmp_path: Path) -> None:
    """dbt's runner, unlike its command, prints no usage error: the build says it, and exits 2."""
    proc = subprocess.run([str(BIN / "lakehouse"), "build", "--no-such-flag"], cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "LAKEHOUSE_DIR": str(tmp_path / "lh")},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Error: No such option: --no-such-flag" in proc.stderr


@pytest.mark.parametrize(("args", "expected"), [
    (["build"], ["build", "--target", "thrift"]),
    (["build", "--target", "local", "-s", "gold"], ["build", "-s", "gold", "--target", "thrift"]),
    (["build", "-t", "local"], ["build", "--target", "thrift"]),
    (["build", "--target=local", "--vars", "{target: x}"], ["build", "--vars", "{target: x}", "--target", "thrift"]),
])  # fmt: skip
def test_a_build_through_the_server_selects_its_target_only(args, expected) -> None:
    assert with_target(args, "thrift") == expected
    assert target_of(with_target(args, "thrift")) == "thrift"


def _record(root: Path, pid: int, host: str, port: int) -> None:
    (root / "logs").mkdir(parents=True, exist_ok=True)
    (root / "logs" / f"thriftserver-{port}.json").write_text(json.dumps({"pid": pid, "host": host, "port": port}))


def test_a_server_is_found_only_while_it_runs_and_answers(tmp_path: Path) -> None:
    """A record left by a killed server, or one whose port does not answer, is passed over."""
    assert running_server(tmp_path) is None  # no logs folder at all
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        _record(tmp_path, int(ended.stdout), "127.0.0.1", port)  # its process is gone
        assert running_server(tmp_path) is None
        _record(tmp_path, os.getpid(), "0.0.0.0", port)  # noqa: S104 - listening everywhere
        assert running_server(tmp_path) == ("127.0.0.1", port)
    assert running_server(tmp_path) is None  # the port no longer answers


def test_dbt_spark_runs_the_statements_and_only_its_java_errors_are_shortened(lakehouse) -> None:
    """``lakehouse build`` changes nothing of how dbt-spark's cursor runs a statement (the
    session, its settings): it only shortens a Java error (lakehouse.dbt_spark_errors), once
    per process however often it is asked."""
    from dbt.adapters.spark.session import Cursor
    from dbt_common.exceptions import DbtRuntimeError

    shorten_java_errors()
    wrapped = Cursor.execute
    shorten_java_errors()
    assert Cursor.execute is wrapped and wrapped.shortens_java_errors
    cursor = Cursor(server_side_parameters={})
    cursor.execute("select count(*) as n from range(5)")
    assert cursor.fetchall()[0]["n"] == 5
    # a statement Spark cannot analyse is dbt-spark's own runtime error
    with pytest.raises(DbtRuntimeError, match="no_such_table"):
        cursor.execute("select * from no_such_table")


def test_a_query_that_fails_in_its_tasks_is_a_short_dbt_error(lakehouse) -> None:
    """A query that fails as dbt fetches its rows (a model's compile-time query, a data test)
    raised py4j's error, the Java exception with every stack frame of the task and the driver:
    dbt printed some hundred lines for a `cdc_topic_formats` pattern that does not compile.
    It is dbt's runtime error now, the exceptions' messages without their frames."""
    from dbt.adapters.spark.session import Cursor
    from dbt_common.exceptions import DbtRuntimeError

    shorten_java_errors()
    cursor = Cursor(server_side_parameters={})
    # the pattern is made in the task, so the query fails there, not while Spark plans it
    cursor.execute("select count(*) as n from range(1) where 'bench.x' rlike concat('^bench[.](', string(id))")
    with pytest.raises(DbtRuntimeError) as failed:
        cursor.fetchall()
    message = str(failed.value)
    assert "java.util.regex.PatternSyntaxException: Unclosed group near index 11" in message, message
    assert "^bench[.](0" in message, message
    assert "\tat " not in message and "Driver stacktrace" not in message, message
    assert len(message.splitlines()) <= 6, message


def test_java_stack_frames_are_left_out_of_an_error_and_a_new_cause_is_kept() -> None:
    from lakehouse.dbt_spark_errors import java_error_text

    text = (
        "An error occurred while calling o1.collectToPython.\n"
        ": org.apache.spark.SparkException: Job aborted: java.lang.IllegalStateException: boom\n"
        "second line of the message\n"
        "\tat org.apache.spark.A.b(A.scala:1)\n"
        "\t... 22 more\n"
        "Driver stacktrace:\n"
        "\tat org.apache.spark.C.d(C.scala:2)\n"
        "Caused by: java.lang.IllegalStateException: boom\n"
        "\tat org.apache.spark.E.f(E.scala:3)\n"
        "Caused by: java.io.IOException: disk full\n"
        "\tat org.apache.spark.G.h(G.scala:4)\n"
    )
    assert java_error_text(text).splitlines() == [
        "An error occurred while calling o1.collectToPython.",
        ": org.apache.spark.SparkException: Job aborted: java.lang.IllegalStateException: boom",
        "second line of the message",
        "Caused by: java.io.IOException: disk full",
    ]


def test_a_build_of_a_lakehouse_with_nothing_landed_says_so_once(tmp_path: Path) -> None:
    """Each node that reads bronze failed on its own in a lakehouse with nothing landed: six
    errors of some thirty lines, a plan each. The project's on-run-start hook says it once,
    before any node runs, and a selection that reads nothing of bronze still builds."""
    env = dict(os.environ, LAKEHOUSE_DIR=str(tmp_path / "lh"))
    empty = subprocess.run([str(BIN / "lakehouse"), "build"], env=env, capture_output=True, text=True, timeout=600)
    said = empty.stdout + empty.stderr
    assert empty.returncode == 2, said[-3000:]
    assert (f"bronze.kafka_records is not in this lakehouse (LAKEHOUSE_DIR={tmp_path / 'lh'}), which the run "
            "would read (cdc_parsed, kafka_topic_offsets, 7 data tests): nothing has been landed in it yet. "
            "Land records first, with `lakehouse ingest --from-file DUMP`") in said, said[-3000:]
    assert "TABLE_OR_VIEW_NOT_FOUND" not in said and " START " not in said, said[-3000:]
    seeds = subprocess.run([str(BIN / "lakehouse"), "build", "--select", "cdc_op_codes"], env=env,
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert seeds.returncode == 0, (seeds.stdout + seeds.stderr)[-3000:]
    assert "PASS=" in seeds.stdout and "ERROR=0" in seeds.stdout, seeds.stdout[-2000:]
