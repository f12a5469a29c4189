"""The ``lakehouse`` command: land Kafka records in bronze, build with dbt, query with SQL.

    lakehouse ingest --from-file PATH [--format F] [--topic T]
    lakehouse ingest --bootstrap-servers HOST:PORT --topics T1,T2 [--format F] [--follow]
    lakehouse ingest ... --build [--build-args "..."] [--build-every SECONDS] [--test-every SECONDS]
    lakehouse build [dbt build arguments...]
    lakehouse sql "SELECT ..." [--json]     (no query: the interactive spark-sql shell)
    lakehouse serve [--host 127.0.0.1] [--port 10000]
    lakehouse kafka up|down|status|jars [--port N]
    lakehouse postgres up|down|status|env|bin [--port N] [--database NAME]
    lakehouse cluster up|down|status [--port 7077] [--workers 2]

Everything lives under ``LAKEHOUSE_DIR`` (default ``./lakehouse``): Delta tables, the
metastore and the Kafka checkpoints. Run from anywhere; ``build`` runs dbt in the checkout.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lakehouse import __version__
from lakehouse.local import cluster, postgres
from lakehouse.local import commands as local_commands
from lakehouse.paths import PROJECT_DIR, lakehouse_dir

FORMATS = (
    "dataworks", "drs-json", "drs-json-c", "cloudcanal-json", "canal-json", "debezium-json",
    "debezium-flat", "debezium-smt", "oms-json", "dataworks-v2", "shareplex-json",
    "oms-avro-json", "maxwell-json", "ogg-json", "aws-dms-json",
)  # fmt: skip


#: How often `lakehouse ingest --follow --build` builds, at most (seconds).
DEFAULT_BUILD_EVERY = 60.0


def _progress(message: str) -> None:
    print(f"[lakehouse] {message}", file=sys.stderr, flush=True)


#: What to do instead when another process holds the Derby metastore, per command.
_DERBY_BUSY_HINTS = {
    "build": "If that is `lakehouse serve`, build through it: `lakehouse build --target thrift` "
             "with LAKEHOUSE_THRIFT_PORT set to its port. Otherwise stop it first.",
    "ingest": "Stop it (a lakehouse serve, sql or build) first, or keep the metastore in "
              "PostgreSQL (LAKEHOUSE_METASTORE_URL, see `lakehouse postgres`), which processes share.",
    "sql": "Stop it first, or keep the metastore in PostgreSQL (LAKEHOUSE_METASTORE_URL, see "
           "`lakehouse postgres`), which processes share.",
}  # fmt: skip


def _serving_derby(root: Path) -> tuple[str, int] | None:
    """Host and port of the ``lakehouse serve`` that holds the Derby metastore of ``root`` now."""
    from lakehouse.serve import running_server
    from lakehouse.session import metastore_in_use, spark_conf, uses_derby

    if not uses_derby(spark_conf(root)) or not metastore_in_use(root):
        return None
    return running_server(root)


def _derby_busy(command: str, *, server_asked: bool = False) -> bool:
    """Whether another process holds this lakehouse's Derby metastore; if so, say what to do.

    Asked before ``command`` starts a Spark driver, which Derby would refuse only after the
    metastore client's many retries and tens of thousands of lines of stack traces. A running
    ``lakehouse serve`` is said at once (``server_asked``: the caller has just found none);
    another holder is given a few seconds to let go (an ending process).
    """
    from lakehouse.session import derby_busy

    root = lakehouse_dir()
    if (server_asked or _serving_derby(root) is None) and not derby_busy(root):
        return False
    _progress(
        f"{command}: the Derby metastore of {root} is open in another process, and Derby lets "
        f"one process at a time open it. {_DERBY_BUSY_HINTS.get(command, 'Stop it first.')}"
    )
    return True


def cmd_ingest(args: argparse.Namespace) -> int:
    """Land a dump file or Kafka topics in bronze and print a one-line summary."""
    if bool(args.from_file) == bool(args.bootstrap_servers):
        _progress("ingest needs exactly one of --from-file PATH or --bootstrap-servers HOST:PORT")
        return 2
    if (args.build_args or args.build_every is not None) and not args.build:
        _progress("ingest: --build-args and --build-every go with --build")
        return 2
    if args.build_every is not None and not args.follow:
        _progress("ingest: --build-every goes with --follow (without it, --build builds once, when caught up)")
        return 2
    if args.build_every is not None and args.build_every <= 0:
        _progress(f"ingest: --build-every {args.build_every:g}: give a number of seconds above 0")
        return 2
    if args.test_every is not None and not (args.build and args.follow):
        _progress("ingest: --test-every goes with --follow --build (a single `--build` runs the data "
                  "tests with its models, as `dbt build` does)")  # fmt: skip
        return 2
    if args.test_every is not None and args.test_every <= 0:
        _progress(f"ingest: --test-every {args.test_every:g}: give a number of seconds above 0")
        return 2
    try:
        build_args = shlex.split(args.build_args or "")
    except ValueError as exc:
        _progress(f"ingest: --build-args: {exc}")
        return 2
    if _derby_busy("ingest"):
        return 2
    # with --test-every the builds leave the data tests out, and they run apart, as often as it says
    models_only = ["--exclude-resource-type", "test"] if args.test_every is not None else []
    build = (lambda: run_dbt(["build", *build_args, *models_only])) if args.build else None
    tests = (lambda: run_dbt(["test", *build_args])) if args.test_every is not None else None
    if args.from_file:
        status = _ingest_file(args)
        return build() if build is not None and status == 0 else status
    from lakehouse.kafka_loader.stream import ingest_kafka

    if args.follow and args.build_every is None:
        args.build_every = DEFAULT_BUILD_EVERY
    return ingest_kafka(args, build, tests)


def _ingest_file(args: argparse.Namespace) -> int:
    from lakehouse import bronze, file_source
    from lakehouse.session import get_spark

    path = Path(args.from_file).expanduser().resolve()
    if not path.is_file():
        _progress(f"ingest: no such file: {path}")
        return 2
    started = time.monotonic()
    _progress(f"starting Spark (LAKEHOUSE_DIR={lakehouse_dir()})")
    spark = get_spark("lakehouse-ingest")
    bronze.ensure_bronze(spark)
    _progress(f"reading {path}")
    first = file_source.next_offset(spark, bronze.TABLE, args.topic) if args.topic else 0
    dump = file_source.read_dump(spark, str(path), args.topic or None, first)
    if dump.unrouted:
        _progress(
            f"{path}: {dump.unrouted} line(s) are not kcat -J envelopes with valid coordinates; landed under "
            f"topic {file_source.UNROUTED_TOPIC}, which silver quarantines with the reason (use --topic for "
            "bare values). The first of them:"
        )
        for example in dump.unrouted_examples:
            _progress(f"  {example}")
    result = bronze.land(spark, dump.records, fmt=args.format, source=f"file:{path}", ranges=dump.ranges)
    seconds = time.monotonic() - started
    print(
        f"ingest {path.name}: read {result.read}, landed {result.landed}, "
        f"skipped {result.skipped} as already landed{conflicts_note(result.conflicting)} "
        f"(batch {result.batch_id}, {seconds:.1f}s)"
    )
    return conflicts_status(result.conflicting, args.accept_conflicts, str(path), result.batch_id)


def conflicts_note(conflicting: int) -> str:
    """``, conflicting N (kept in bronze.kafka_conflicts)`` for the summary line; nothing for none."""
    if not conflicting:
        return ""
    from lakehouse.bronze import CONFLICTS_TABLE

    return f", conflicting {conflicting} (kept in {CONFLICTS_TABLE})"


def conflicts_status(conflicting: int, accepted: bool, source: str, batch_id: str | None = None) -> int:
    """The exit status after a landing that found ``conflicting`` records: 1 unless accepted.

    A conflict is a record whose (topic, partition, offset) bronze holds with other bytes: a
    recreated topic, a dump of another cluster. Bronze keeps its version either way; failing
    makes a script stop before it builds on a lakehouse fed from two histories.
    """
    if not conflicting:
        return 0
    from lakehouse.bronze import CONFLICTS_TABLE

    where = f" where batch_id = '{batch_id}'" if batch_id else ""
    _progress(
        f"ingest {source}: {conflicting} record(s) have a (topic, partition, offset) that bronze holds with "
        f"another key or value; bronze kept its own, both versions are in {CONFLICTS_TABLE} "
        f"(lakehouse sql \"select * from {CONFLICTS_TABLE}{where}\")"
        + ("" if accepted else ". Exit status 1: rerun with --accept-conflicts once reviewed")
    )
    return 0 if accepted else 1


def cmd_build(args: argparse.Namespace) -> int:
    """``dbt build`` with the project's profile against this LAKEHOUSE_DIR."""
    return run_dbt(["build", *args.dbt_args])


def run_dbt(dbt_args: list[str]) -> int:
    """Run dbt in the checkout with ``profiles/`` and an absolute ``LAKEHOUSE_DIR``: on the
    ``local`` target (dbt's session method) in this process, the Spark session started beside
    dbt's own start (:mod:`lakehouse.dbt_session`); on another target as a command. A build or
    run in LAKEHOUSE_THREADS threads unless its arguments say (``with_threads``)."""
    from lakehouse import dbt_session

    try:
        dbt_args = dbt_session.with_threads(dbt_args)
    except ValueError as exc:
        _progress(f"{dbt_args[0]}: {exc}")
        return 2
    root = str(lakehouse_dir())
    args = [*dbt_args, "--profiles-dir", str(PROJECT_DIR / "profiles"), "--project-dir", str(PROJECT_DIR)]
    _progress(f"running {' '.join(args)} (LAKEHOUSE_DIR={root})")
    if dbt_session.target_of(dbt_args) == "local":
        server = _serving_derby(Path(root))
        if server is not None:
            return _run_dbt_through(server, dbt_args, root)
        if _derby_busy(dbt_args[0], server_asked=True):
            return 2
        os.environ["LAKEHOUSE_DIR"] = root
        return dbt_session.run_dbt_here(args, PROJECT_DIR)
    dbt = Path(sys.executable).with_name("dbt")
    return subprocess.call([str(dbt), *args], cwd=PROJECT_DIR, env=dict(os.environ, LAKEHOUSE_DIR=root))


def _run_dbt_through(server: tuple[str, int], dbt_args: list[str], root: str) -> int:
    """Run dbt on the ``thrift`` target, through the ``lakehouse serve`` at ``server``.

    What ``lakehouse build`` does on the local target while that server holds the Derby
    metastore, which lets one process at a time open it: the build goes through the server's
    Spark rather than refusing to start. dbt's parse is kept in ``target/thrift`` (unless
    DBT_TARGET_PATH or --target-path says otherwise), so that alternating with local builds does
    not make each parse the whole project again.
    """
    from lakehouse import dbt_session

    host, port = server
    _progress(
        f"{dbt_args[0]}: `lakehouse serve` on {host}:{port} has the Derby metastore of {root} open: "
        "running through it (--target thrift)"
    )
    env = dict(os.environ, LAKEHOUSE_DIR=root, LAKEHOUSE_THRIFT_HOST=host, LAKEHOUSE_THRIFT_PORT=str(port))
    if not any(arg == "--target-path" or arg.startswith("--target-path=") for arg in dbt_args):
        env.setdefault("DBT_TARGET_PATH", "target/thrift")
    args = [*dbt_session.with_target(dbt_args, "thrift"),
            "--profiles-dir", str(PROJECT_DIR / "profiles"), "--project-dir", str(PROJECT_DIR)]  # fmt: skip
    dbt = Path(sys.executable).with_name("dbt")
    return subprocess.call([str(dbt), *args], cwd=PROJECT_DIR, env=env)


def cmd_sql(args: argparse.Namespace) -> int:
    """Run SQL statements against the lakehouse and print the last result (no query: a shell)."""
    if args.query is None and args.json:
        _progress("sql: --json needs a query")
        return 2
    server = _serving_derby(lakehouse_dir())
    if server is not None:
        return _sql_through(server, args)
    if args.query is None:
        from lakehouse.serve import spark_sql_shell

        return spark_sql_shell()
    from lakehouse.session import get_spark
    from lakehouse.sql_output import error_message, print_json, print_table

    if _derby_busy("sql", server_asked=True):
        return 2
    spark = get_spark("lakehouse-sql")
    statements = _split_statements(args.query)
    result, rows, number = None, None, 0
    try:
        for number, statement in enumerate(statements, 1):  # noqa: B007 - the failed one's, after the loop
            result = spark.sql(statement)
        # a query runs when its rows are fetched: its runtime errors (a failed cast, a
        # raise_error) come from here, and are the last statement's
        rows = result.collect() if result is not None else None
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException and friends
        _progress(f"sql failed{_which_statement(statements, number)}: {error_message(str(exc))}")
        if "TABLE_OR_VIEW_NOT_FOUND" in str(exc) and not _has_layers(spark):
            _progress(f"sql: LAKEHOUSE_DIR={lakehouse_dir()} holds no lakehouse: no bronze, silver or gold "
                      "database (nothing landed or built in it). Is it the one you meant?")  # fmt: skip
        return 1
    if result is None:
        return 0
    (print_json if args.json else print_table)(result.columns, rows)
    return 0


def _has_layers(spark: Any) -> bool:
    """Whether the metastore knows any of the lakehouse's databases: without them a missing
    table most often means the wrong LAKEHOUSE_DIR (a new one, which the command just made),
    which the table's absence alone does not say."""
    return bool({"bronze", "silver", "gold"} & {row[0] for row in spark.sql("show databases").collect()})


def _which_statement(statements: list[str], number: int) -> str:
    """`` in statement 2 of 3 (insert into ...)`` when a script ran several, else nothing."""
    if len(statements) < 2:
        return ""
    text = " ".join(statements[number - 1].split())
    return f" in statement {number} of {len(statements)} ({text[:60]}{'...' if len(text) > 60 else ''})"


def _sql_through(server: tuple[str, int], args: argparse.Namespace) -> int:
    """``lakehouse sql`` while ``lakehouse serve`` holds the Derby metastore: the query goes to
    the server (Derby lets one process at a time open it), the shell is the wheel's beeline."""
    from lakehouse.serve import beeline_command
    from lakehouse.sql_output import print_json, print_table
    from lakehouse.thrift_sql import ThriftSqlError, run_statements

    host, port = server
    _progress(f"sql: `lakehouse serve` on {host}:{port} has the Derby metastore of {lakehouse_dir()} open: "
              "asking it")  # fmt: skip
    if args.query is None:
        command = shlex.split(beeline_command(host, port))
        sys.stdout.flush()
        os.execv(command[0], command)
    statements = _split_statements(args.query)
    try:
        result = run_statements(host, port, statements)
    except ThriftSqlError as exc:
        _progress(f"sql failed{_which_statement(statements, exc.statement)}: {exc}")
        return 1
    if result is not None:
        (print_json if args.json else print_table)(*result)
    return 0


def _split_statements(sql: str) -> list[str]:
    """Split on semicolons outside quotes, so ``a; b`` runs both and ``';'`` stays whole; each
    piece without the blanks around it (a syntax error's position counts from its start), the
    blank pieces (``a;``) left out."""
    parts, current, quote = [], [], ""
    for ch in sql:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch == ";":
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def cmd_serve(args: argparse.Namespace) -> int:
    """Spark's Thrift JDBC/ODBC server on the lakehouse (see :mod:`lakehouse.serve`)."""
    from lakehouse.serve import serve

    return serve(args.host, args.port)


def cmd_kafka(args: argparse.Namespace) -> int:
    """Run the project's local single-node Kafka broker (see :mod:`lakehouse.local.broker`)."""
    from lakehouse.local import broker

    directory = Path(args.dir).expanduser().resolve() if args.dir else broker.broker_dir()
    try:
        if args.action == "jars":
            print(broker.ensure_jars())
        elif args.action == "up":
            if broker.status(directory) is None:
                _progress(f"starting Kafka (KRaft, single node) in {directory}")
            info = broker.start(
                args.port, directory, sasl_port=args.sasl_port,
                sasl_password=os.environ.get("LAKEHOUSE_KAFKA_SASL_PASSWORD"),
            )  # fmt: skip
            if info.sasl_port:
                _progress(
                    f"SASL_PLAINTEXT (PLAIN, user {broker.SASL_USER}) on "
                    f"{info.sasl_bootstrap_servers}"
                )
            _progress(f"Kafka is up (pid {info.pid}); log: {directory / 'logs' / 'server.log'}")
            print(info.bootstrap_servers)
        elif args.action == "down":
            stopped = broker.stop(directory)
            _progress(f"Kafka stopped (pid {stopped.pid})" if stopped else "Kafka was not running")
        else:
            info = broker.status(directory)
            if info is None:
                _progress(f"Kafka is not running ({directory})")
                return 1
            print(f"{info.bootstrap_servers} pid {info.pid} dir {info.directory}")
    except broker.BrokerError as exc:
        _progress(str(exc))
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; its help texts are the CLI's reference."""
    parser = argparse.ArgumentParser(
        prog="lakehouse",
        description=(
            "Land CDC messages from Kafka in a Delta lakehouse and refine them with dbt. "
            "Everything lives under LAKEHOUSE_DIR (default ./lakehouse)."
        ),
        epilog="Typical use: lakehouse ingest ...; lakehouse build; lakehouse sql 'select ...'",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = sub.add_parser(
        "ingest",
        help="land Kafka records (from a dump file or a broker) in bronze.kafka_records",
        description=(
            "Land Kafka records in bronze.kafka_records, byte-exact, once per "
            "(topic, partition, offset): records already landed are skipped. A record at a landed "
            "(topic, partition, offset) with another key or value is a conflict: bronze keeps its own, "
            "both go to bronze.kafka_conflicts, and the ingest exits 1 (see --accept-conflicts). A dump "
            "line that is not a kcat -C -J envelope with valid coordinates (not JSON, no offset, a "
            "negative partition, ...) lands under topic _lakehouse_unrouted and silver quarantines it "
            "with what it is; keys and values that are not UTF-8 land as they are and are quarantined. "
            "See docs/operations-bad-input.md."
        ),
    )
    src = ingest.add_argument_group("from a dump file")
    src.add_argument(
        "--from-file", metavar="PATH",
        help="one record per line: the JSON envelope of `kcat -C -J`, or with --topic the bare value",
    )  # fmt: skip
    src.add_argument(
        "--topic", metavar="NAME",
        help="lines are bare message values of this topic (partition 0, offsets appended)",
    )  # fmt: skip
    ingest.add_argument(
        "--accept-conflicts", action="store_true",
        help="exit 0 even when records conflict: their (topic, partition, offset) is landed with another "
        "key or value (bronze keeps its own version; both are kept in bronze.kafka_conflicts). "
        "Without it such an ingest lands everything else and exits 1",
    )  # fmt: skip
    ingest.add_argument(
        "--format", choices=FORMATS, metavar="NAME",
        help="format id of the records (else the topic->format seed, else detection); "
        f"one of: {', '.join(FORMATS)}",
    )  # fmt: skip
    kafka = ingest.add_argument_group("from Kafka")
    kafka.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka bootstrap servers")
    kafka.add_argument("--topics", metavar="T1,T2", help="comma-separated topics to read")
    kafka.add_argument("--topic-pattern", metavar="REGEX", help="read every topic matching REGEX")
    kafka.add_argument(
        "--follow", action="store_true",
        help="keep running and land new records every --trigger-interval (default: stop when caught up)",
    )  # fmt: skip
    kafka.add_argument(
        "--trigger-interval", default="10 seconds", metavar="DURATION",
        help="with --follow, how often to land new records (default: 10 seconds)",
    )  # fmt: skip
    kafka.add_argument(
        "--starting-offsets", default="earliest", metavar="earliest|latest|JSON",
        help="where a topic without a checkpoint starts (default: earliest)",
    )  # fmt: skip
    kafka.add_argument(
        "--max-offsets-per-trigger", type=int, default=2_000_000, metavar="N",
        help="records per micro-batch at most (default: 2000000)",
    )  # fmt: skip
    kafka.add_argument(
        "--fail-on-data-loss", choices=("true", "false"), default="true",
        help="stop when offsets were deleted by retention before landing (default: true)",
    )  # fmt: skip
    kafka.add_argument(
        "--kafka-option", action="append", default=[], metavar="KEY=VALUE",
        help="any Kafka client option, e.g. security.protocol=SASL_SSL; repeatable. "
        "VALUE may be env:NAME or file:PATH to read a secret",
    )  # fmt: skip
    kafka.add_argument(
        "--kafka-config", metavar="PATH",
        help="a properties file of Kafka client options (key=value lines)",
    )  # fmt: skip
    then = ingest.add_argument_group("then build")
    then.add_argument(
        "--build", action="store_true",
        help="then run `lakehouse build` in this process, on the Spark session the landing started "
        "(no second start); with --follow, every --build-every seconds while records land",
    )  # fmt: skip
    then.add_argument(
        "--build-args", metavar="ARGS", default="",
        help="arguments for that dbt build, as one string, e.g. \"--select silver+ --vars '{...}'\"",
    )  # fmt: skip
    then.add_argument(
        "--build-every", type=float, metavar="SECONDS",
        help=f"with --follow --build: build at most this often, when records landed since the last "
        f"build (default: {DEFAULT_BUILD_EVERY:g})",
    )  # fmt: skip
    then.add_argument(
        "--test-every", type=float, metavar="SECONDS",
        help="with --follow --build: the builds leave dbt's data tests out, and `dbt test` (with "
        "--build-args) runs them at most this often, after a build that passed since they last ran "
        "(default: every build runs them, as `dbt build` does). They check whole tables: at "
        "millions of changes they take longer than a small increment's models",
    )  # fmt: skip
    ingest.set_defaults(func=cmd_ingest)

    build = sub.add_parser(
        "build",
        help="run `dbt build` with the project's profile (bronze -> silver -> gold)",
        description=(
            "Run `dbt build --profiles-dir profiles` in the project against LAKEHOUSE_DIR. "
            "Later runs process only what is new. Extra arguments go to dbt, e.g. "
            "`lakehouse build --select gold` or `lakehouse build --full-refresh`. On the local "
            "target dbt runs in this process, with the Spark session started while dbt starts. "
            "dbt runs in LAKEHOUSE_THREADS threads (default 2; `--threads N` wins), each in a "
            "Spark session of its own."
        ),
    )
    build.add_argument("dbt_args", nargs="*", help="arguments passed to dbt build")
    build.set_defaults(func=cmd_build)

    sql = sub.add_parser(
        "sql",
        help="run SQL against the lakehouse and print the result",
        description=(
            "Run SQL (Spark SQL; several statements separated by ;) and print the result. "
            "Without a query, open the interactive spark-sql shell on the lakehouse. While "
            "`lakehouse serve` holds the lakehouse's Derby metastore, the query goes through "
            "that server, and the shell is beeline connected to it."
        ),
    )
    sql.add_argument(
        "query", nargs="?",
        help='SQL text, e.g. "select * from gold.cdc_current_state" (omit for the spark-sql shell)',
    )  # fmt: skip
    sql.add_argument("--json", action="store_true", help="print one JSON object per row")
    sql.set_defaults(func=cmd_sql)

    serve = sub.add_parser(
        "serve",
        help="serve the lakehouse to SQL tools (beeline, DBeaver, dbt --target thrift) over JDBC/ODBC",
        description=(
            "Run Spark's Thrift JDBC/ODBC server (HiveServer2 protocol) on the lakehouse in the "
            "foreground, with the same Spark settings as every other command, until Ctrl-C. "
            "Connect with jdbc:hive2://127.0.0.1:10000/default (beeline, DBeaver) or "
            "`dbt build --profiles-dir profiles --target thrift`. The Derby metastore allows "
            "one process: stop lakehouse sql and build on this LAKEHOUSE_DIR first."
        ),
    )
    serve.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1; the server has no authentication)",
    )  # fmt: skip
    serve.add_argument("--port", type=int, default=10000, help="TCP port (default: 10000)")
    serve.set_defaults(func=cmd_serve)

    kafka_cmd = sub.add_parser(
        "kafka",
        help="start/stop the local single-node Kafka broker for development and tests",
        description=(
            "A real Apache Kafka broker (KRaft, one node) from Maven Central jars, listening on "
            "127.0.0.1 only. Data and logs live in LAKEHOUSE_KAFKA_DIR (default .cache/kafka); "
            "topics survive down/up."
        ),
    )
    kafka_cmd.add_argument("action", choices=("up", "down", "status", "jars"))
    kafka_cmd.add_argument(
        "--port", type=int, default=None, metavar="N",
        help="client port on 127.0.0.1 (default: LAKEHOUSE_KAFKA_PORT or 9092)",
    )  # fmt: skip
    kafka_cmd.add_argument(
        "--sasl-port", type=int, default=None, metavar="N",
        help="also listen with SASL_PLAINTEXT/PLAIN on N (user lakehouse, password from "
        "LAKEHOUSE_KAFKA_SASL_PASSWORD)",
    )  # fmt: skip
    kafka_cmd.add_argument("--dir", metavar="PATH", help="broker directory (data, logs, pid file)")
    kafka_cmd.set_defaults(func=cmd_kafka)

    postgres.register(sub)
    cluster.register(sub)
    local_commands.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``.venv/bin/lakehouse`` (``argv`` None: the command line).

    A command from the command line stops the Spark driver it started before it returns
    (:func:`lakehouse.session.stop_driver`), so that the next command of a script finds the
    metastore free; a caller passing ``argv`` keeps its session (the tests' lakehouse)."""
    from lakehouse.session import stop_driver

    command_line = argv is None
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    # what a query or build found absent in a folder without a lakehouse, to remove again after it
    absent = _absent_lakehouse_paths() if command_line and argv[:1] in (["sql"], ["build"]) else []
    try:
        if argv[:1] == ["build"] and not {"-h", "--help"} & set(argv[1:]):
            # Everything after `build` belongs to dbt (argparse would claim --select and friends).
            return run_dbt(["build", *argv[1:]])
        args = parser.parse_args(argv)
        return int(args.func(args))
    finally:
        if command_line:
            stop_driver()
            _remove_if_still_empty(absent)


def _absent_lakehouse_paths() -> list[Path]:
    """The paths a Spark driver creates in LAKEHOUSE_DIR that are not there yet, when the folder
    holds no lakehouse (no Derby metastore); none otherwise.

    ``lakehouse sql`` or ``build`` pointed at the wrong folder would otherwise leave a
    ``metastore_db``, a ``derby.log`` and the empty schemas of a failed build behind, which
    make the folder look like a lakehouse to the next command. Only for the embedded default
    (Derby, local warehouse): a shared metastore or remote warehouse is not this folder's.
    """
    from lakehouse.session import spark_conf, uses_derby

    root = lakehouse_dir()
    conf = spark_conf(root)
    warehouse = Path(conf["spark.sql.warehouse.dir"])
    if not uses_derby(conf) or "LAKEHOUSE_WAREHOUSE" in os.environ or (root / "metastore_db").exists():
        return []
    return [p for p in (root / "metastore_db", root / "derby.log", warehouse, root) if not p.exists()]


def _remove_if_still_empty(absent: list[Path]) -> None:
    """Remove what the command created of ``absent`` when the warehouse still holds no file
    (a query that created nothing, a build that stopped before writing): no lakehouse came of it."""
    import shutil

    root = lakehouse_dir()
    warehouse = next((p for p in absent if p.name == "warehouse"), None)
    if warehouse is None or any(f.is_file() for f in warehouse.rglob("*")):
        return  # a warehouse that was there before is not ours to judge; one with files is a lakehouse
    for path in absent:
        if path.is_dir() and path != root:
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_file():
            path.unlink(missing_ok=True)
    if root in absent and root.is_dir() and not any(root.iterdir()):
        root.rmdir()


if __name__ == "__main__":
    sys.exit(main())
