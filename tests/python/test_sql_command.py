"""`lakehouse sql` as an analyst meets it: a statement that fails is one message saying what
failed and where, and a query that succeeds prints its rows and nothing after them.

Before: a syntax error printed `[lakehouse] sql failed:` and nothing more (Spark's message begins
with a blank line); an error raised while the rows were fetched (a `raise_error`, a failed
cast) escaped as a Python traceback of some hundred lines with Spark's executor's Java stack
before it; an unknown column came after a line of JSON with the Java stack trace (pyspark's own
log of the error); and one successful command in three or four ended with py4j's ERROR and two
tracebacks, its finalizer thread telling the JVM the command had just stopped about objects
Python no longer held. A table missing from a LAKEHOUSE_DIR that holds no lakehouse says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import BIN, PROJECT

#: Lines every Spark driver prints at its start, whatever the command.
_SPARK_BANNER = ("WARNING: Using incubator modules", "Setting default log level", "To adjust logging level")


def _sql(root: Path, query: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "lakehouse"), "sql", query], env=dict(os.environ, LAKEHOUSE_DIR=str(root)),
        cwd=PROJECT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _said(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the driver's start banner."""
    return [line for line in proc.stderr.splitlines() if not line.startswith(_SPARK_BANNER)]


def test_a_failed_statement_is_one_message_that_says_what_and_where(tmp_path: Path) -> None:
    typo = _sql(tmp_path, "selec 1")
    assert typo.returncode == 1
    assert _said(typo) == [
        "[lakehouse] sql failed: [PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'. SQLSTATE: 42601 (line 1, pos 0)",
        "    selec 1",
        "    ^^^",
    ]

    unknown = _sql(tmp_path, "select 1 as a; select nope from range(1)")
    assert unknown.returncode == 1
    said = _said(unknown)
    assert len(said) == 1, said
    assert said[0].startswith("[lakehouse] sql failed in statement 2 of 2 (select nope from range(1)): "
                              "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter "
                              "with name `nope` cannot be resolved.")  # fmt: skip

    # a table missing from a directory that holds no lakehouse at all: most often the wrong
    # LAKEHOUSE_DIR, which the command says
    missing = _sql(tmp_path, "select * from gold.cdc_current_state")
    assert missing.returncode == 1
    assert _said(missing) == [
        "[lakehouse] sql failed: [TABLE_OR_VIEW_NOT_FOUND] The table or view `gold`.`cdc_current_state` cannot be "
        "found. Verify the spelling and correctness of the schema and catalog.",
        f"[lakehouse] sql: LAKEHOUSE_DIR={tmp_path} holds no lakehouse: no bronze, silver or gold database "
        "(nothing landed or built in it). Is it the one you meant?",
    ]

    raised = _sql(tmp_path, "select raise_error('no such order')")
    assert raised.returncode == 1
    assert _said(raised) == ["[lakehouse] sql failed: [USER_RAISED_EXCEPTION] no such order SQLSTATE: P0001"]
    assert raised.stdout == ""


def test_a_stopped_driver_is_told_nothing_more(tmp_path: Path) -> None:
    """py4j's client is marked disconnected when the command stops its driver, so that its
    finalizer thread sends nothing more: the race it lost (a command sent as the JVM exited,
    the connection reset under it) cannot be made to happen on demand, so the test checks the
    flag py4j consults before each send, and that objects released after the stop log nothing."""
    script = r"""
import gc, logging, time
from lakehouse.session import get_spark, stop_driver

logged = []


class Keep(logging.Handler):
    def emit(self, record):
        logged.append(record.getMessage())


logging.getLogger().addHandler(Keep())
spark = get_spark("finalizer-test")
client = spark.sparkContext._gateway._gateway_client
held = [spark._jvm.java.util.ArrayList() for _ in range(20)]
stop_driver()
del held
gc.collect()
time.sleep(2.5)  # py4j's finalizer thread looks for released objects every second
print("CONNECTED", client.is_connected, "LOGGED", logged)
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], env=dict(os.environ, LAKEHOUSE_DIR=str(tmp_path)),
        cwd=PROJECT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CONNECTED False LOGGED []" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
