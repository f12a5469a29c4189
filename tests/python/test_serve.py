"""``lakehouse serve``: Spark's Thrift JDBC/ODBC server on the lakehouse, used by real clients.

One server start on a temporary LAKEHOUSE_DIR: the bundled sample is landed with
``lakehouse ingest`` (a local Spark session), dbt's ``thrift`` target builds bronze -> gold
through the server, and so does ``lakehouse build`` on the local target (it finds the server
that holds Derby), ``lakehouse sql`` asks the server too, the pyspark wheel's beeline reads
gold over JDBC, SIGTERM stops everything,
and afterwards ``lakehouse sql``'s spark-sql shell (a local session again) reads what the server
built: one lakehouse, whichever way in, and the Derby metastore is free again after the stop.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from conftest import BIN, PROJECT, CliLakehouse
from lakehouse.ports import free_port
from lakehouse.thrift_sql import run_statements
from serve_process import serve_process, wait_ready

SAMPLE = PROJECT / "samples" / "debezium_inventory.jsonl"
#: The live keys of the sample's inventory database: 1003 deleted, 1004 re-keyed to 1005.
LIVE_KEYS = [
    ("customers", '{"id":1001}'), ("customers", '{"id":1002}'), ("customers", '{"id":1005}'),
    ("products", '{"id":101}'), ("products", '{"id":102}'),
]  # fmt: skip
GOLD_QUERY = "select source_table, pk, row from gold.cdc_current_state order by source_table, pk"


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _tsv_rows(stdout: str, header: str) -> list[list[str]]:
    """The rows beeline printed after ``header`` (tsv2; beeline may prefix its prompt)."""
    lines = stdout.replace("\0", "").splitlines()
    start = next((i for i, line in enumerate(lines) if line.endswith(header)), None)
    assert start is not None, f"no header {header!r} in beeline's output:\n{stdout}"
    return [line.split("\t") for line in lines[start + 1:] if line.strip()]


def _built_through_server(lh: CliLakehouse, logs: Path, model: str) -> str:
    """``lakehouse build --select <model>`` through the running server; dbt's log, whitespace folded."""
    build = subprocess.run(
        [str(BIN / "lakehouse"), "build", "--select", model, "--no-use-colors",
         "--target-path", str(logs / "target"), "--log-path", str(logs)],
        env=lh.env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert build.returncode == 0 and "running through it (--target thrift)" in build.stderr, (
        build.stdout[-4000:] + build.stderr[-4000:])
    return " ".join((logs / "dbt.log").read_text(encoding="utf-8").split())


def test_serve_answers_beeline_and_dbt_thrift_then_stops(tmp_path: Path) -> None:
    lh = CliLakehouse(tmp_path / "lakehouse")
    landed = lh.run("ingest", "--from-file", str(SAMPLE), "--format", "debezium-json").stdout
    assert re.search(r"landed [1-9]\d*, skipped 0", landed), landed

    port = free_port()
    out, err = tmp_path / "serve.out", tmp_path / "serve.err"
    with serve_process(lh.env, port, out, err, cwd=lh.root.parent, grace=60) as server:
        banner = wait_ready(server, out, err)
        url = f"jdbc:hive2://127.0.0.1:{port}/default"
        assert f"JDBC URL: {url}" in banner, banner
        assert f"LAKEHOUSE_THRIFT_PORT={port} " in banner and "build --target thrift" in banner, banner
        jvm_pid = int(re.search(r"\(pid (\d+),", banner).group(1))
        assert _port_open(port) and Path(f"/proc/{jvm_pid}").exists()

        # dbt's thrift target builds bronze -> gold through the server (the server holds Derby,
        # so a local session could not have done it)
        dbt = subprocess.run(
            [str(BIN / "dbt"), "build", "--profiles-dir", str(PROJECT / "profiles"),
             "--project-dir", str(PROJECT), "--target", "thrift", "--no-use-colors",
             "--select", "+cdc_current_state", "--exclude-resource-type", "test",
             "--target-path", str(tmp_path / "dbt-target"), "--log-path", str(tmp_path / "dbt-logs")],
            env=dict(lh.env, LAKEHOUSE_THRIFT_PORT=str(port)), cwd=PROJECT,
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        assert dbt.returncode == 0 and "Completed successfully" in dbt.stdout, dbt.stdout[-4000:]
        assert re.search(r"OK created [a-z ]*model gold\.cdc_current_state", dbt.stdout), dbt.stdout[-4000:]
        assert re.search(r"Done\. PASS=\d+ WARN=0 ERROR=0", dbt.stdout), dbt.stdout[-2000:]

        # `lakehouse build` on the local target (the default) goes through the server that
        # holds Derby, which it finds by the record the server keeps while it serves
        assert json.loads((lh.root / "logs" / f"thriftserver-{port}.json").read_text())["port"] == port
        build = subprocess.run(
            [str(BIN / "lakehouse"), "build", "--select", "cdc_op_codes", "--no-use-colors",
             "--target-path", str(tmp_path / "build-target"), "--log-path", str(tmp_path / "build-logs")],
            env=lh.env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
        assert f"`lakehouse serve` on 127.0.0.1:{port} has the Derby metastore" in build.stderr, build.stderr
        assert "running through it (--target thrift)" in build.stderr, build.stderr
        assert "Completed successfully" in build.stdout, build.stdout[-4000:]
        # a command that needs a driver of its own is refused at once, naming what to do
        started = time.monotonic()
        ingest = subprocess.run([str(BIN / "lakehouse"), "ingest", "--from-file", str(SAMPLE)],
                                env=lh.env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert ingest.returncode == 2 and "is open in another process" in ingest.stderr, ingest.stderr
        assert time.monotonic() - started < 2.5  # no wait for a server to let go
        # `lakehouse sql "..."` asks the server instead: statements in order on one connection,
        # decimals exact at top level and inside a struct, the struct printed as a JSON object,
        # binary as base64 (as a local session prints it)
        sql = subprocess.run(
            [str(BIN / "lakehouse"), "sql", "--json",
             "use gold; select pk, cast('9.999999999999999093266253' as decimal(38, 24)) as d, "
             "named_struct('n', cast('-12345678901234.000000000000000000000001' as decimal(38, 24)), "
             "'s', 'é') as st, unhex('00ff') as b from cdc_current_state where source_table = 'products' order by pk"],
            env=lh.env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert sql.returncode == 0, sql.stderr[-4000:]
        assert f"`lakehouse serve` on 127.0.0.1:{port} has the Derby metastore" in sql.stderr, sql.stderr
        assert sql.stdout.splitlines() == [
            '{"pk": "{\\"id\\":101}", "d": 9.999999999999999093266253, '
            '"st": {"n": -12345678901234.000000000000000000000001, "s": "é"}, "b": "AP8="}',
            '{"pk": "{\\"id\\":102}", "d": 9.999999999999999093266253, '
            '"st": {"n": -12345678901234.000000000000000000000001, "s": "é"}, "b": "AP8="}',
        ], sql.stdout
        # a failed statement: the session's own message without the server's prefix, which
        # statement of the script, and for a syntax error the line with the caret under it
        bad = subprocess.run([str(BIN / "lakehouse"), "sql", "select 1; select * from gold.no_such_table"],
                             env=lh.env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert bad.returncode == 1, bad.stderr
        assert ("[lakehouse] sql failed in statement 2 of 2 (select * from gold.no_such_table): "
                "[TABLE_OR_VIEW_NOT_FOUND] The table or view `gold`.`no_such_table` cannot be found."
                ) in bad.stderr, bad.stderr
        typo = subprocess.run([str(BIN / "lakehouse"), "sql", "selec 1"],
                              env=lh.env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert typo.returncode == 1, typo.stderr
        assert typo.stderr.splitlines()[-3:] == [
            "[lakehouse] sql failed: [PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'. "
            "SQLSTATE: 42601 (line 1, pos 0)",
            "    selec 1",
            "    ^^^",
        ], typo.stderr
        # the models' incremental state is a table the server reads as any other: the row the
        # table columns' build through the server recorded names silver's version it read up to,
        # and the next build through the server finds it (the commit times of `describe
        # history` come through the server as text), sees silver unchanged, and writes nothing
        _built_through_server(lh, tmp_path / "columns", "cdc_table_columns")
        columns, rows = run_statements("127.0.0.1", port, [
            "select progress from meta.cdc_build_progress where model_table = 'gold.cdc_table_columns' "
            "order by recorded_at desc limit 1"])
        mark = json.loads(rows[0][0])
        assert mark["table"] == "gold.cdc_table_columns", mark
        assert mark["upstream"]["table"] == "silver.cdc_parsed", mark
        log = _built_through_server(lh, tmp_path / "columns-again", "cdc_table_columns")
        assert "select 'nothing new for gold.cdc_table_columns' as skipped_write" in log, log[-4000:]
        # and without a query, the shell is beeline on the server (statements piped on stdin run)
        shell = subprocess.run([str(BIN / "lakehouse"), "sql"], input="select pk from gold.cdc_current_state "
                               "where source_table = 'products' order by pk;\n",
                               env=lh.env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert shell.returncode == 0, shell.stdout + shell.stderr[-4000:]
        assert re.findall(r"\|\s*(\{\"id\":\d+\})\s*\|", shell.stdout) == ['{"id":101}', '{"id":102}'], shell.stdout

        # the beeline line the server printed, as printed, plus a query
        beeline_line = re.search(r"beeline:\s+(.+)", banner).group(1)
        assert beeline_line.endswith(f"-u {url}"), beeline_line
        beeline = subprocess.run(
            [*shlex.split(beeline_line), "--outputformat=tsv2", "--silent=true", "-e", GOLD_QUERY],
            env=lh.env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert beeline.returncode == 0, beeline.stdout + beeline.stderr[-4000:]
        rows = _tsv_rows(beeline.stdout, "source_table\tpk\trow")
        assert [(r[0], r[1]) for r in rows] == LIVE_KEYS, beeline.stdout
        product = {r[1]: r[2] for r in rows if r[0] == "products"}['{"id":101}']
        assert '"price":9.999999999999999093266253,' in product, product
        assert json.loads(product, parse_float=str, parse_int=str) == {
            "id": "101", "name": "scooter", "price": "9.999999999999999093266253",
            "stock": "10223372036854775806", "note": "Small 2-wheel scooter é \U0001f6f4",
        }  # fmt: skip

        # a second server: same port -> taken; other port -> the metastore is this server's
        for other, message in ((port, f"port {port} on 127.0.0.1 is taken"),
                               (free_port(), "stop other lakehouse processes (lakehouse sql, build) first")):
            second = subprocess.run([str(BIN / "lakehouse"), "serve", "--port", str(other)], env=lh.env,
                                    capture_output=True, text=True, timeout=120)
            assert second.returncode == 1 and message in second.stderr, second.stderr
        assert server.poll() is None and _port_open(port)

        # Ctrl-C's path: SIGTERM to `lakehouse serve` stops the JVM and frees the port
        server.send_signal(signal.SIGTERM)
        assert server.wait(120) == 0, err.read_text()
    assert "stopped" in err.read_text(), err.read_text()
    assert not Path(f"/proc/{jvm_pid}").exists(), f"JVM {jvm_pid} still running"
    assert not _port_open(port)
    assert not (lh.root / "logs" / f"thriftserver-{port}.json").exists()

    # `lakehouse sql` without a query: the spark-sql shell, a local session on the same lakehouse
    shell = subprocess.run(
        [str(BIN / "lakehouse"), "sql"], input="select source_table, pk from gold.cdc_current_state;\n",
        env=lh.env, cwd=PROJECT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert shell.returncode == 0, shell.stdout + shell.stderr[-4000:]
    printed = {tuple(line.split("\t")) for line in shell.stdout.splitlines() if "\t" in line}
    assert printed == set(LIVE_KEYS), shell.stdout

