"""``lakehouse sql``: run SQL statements against the lakehouse and print the last result.

Without a query it opens the interactive spark-sql shell. While ``lakehouse serve`` holds the
Derby metastore, the statements go to that server and the shell is beeline connected to it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from lakehouse.cli.common import derby_busy, progress, serving_derby
from lakehouse.paths import lakehouse_dir


def cmd_sql(args: argparse.Namespace) -> int:
    """Run SQL statements against the lakehouse and print the last result (no query: a shell)."""
    if args.query is None and args.json:
        progress("sql: --json needs a query")
        return 2
    server = serving_derby(lakehouse_dir())
    if server is not None:
        return _sql_through(server, args)
    if args.query is None:
        from lakehouse.serve import spark_sql_shell

        return spark_sql_shell()
    from lakehouse.session import get_spark
    from lakehouse.sql_output import error_message, print_json, print_table

    if derby_busy("sql", server_asked=True):
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
        progress(f"sql failed{_which_statement(statements, number)}: {error_message(str(exc))}")
        if "TABLE_OR_VIEW_NOT_FOUND" in str(exc) and not _has_layers(spark):
            progress(f"sql: LAKEHOUSE_DIR={lakehouse_dir()} holds no lakehouse: no bronze, silver or gold "
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
    progress(f"sql: `lakehouse serve` on {host}:{port} has the Derby metastore of {lakehouse_dir()} open: "
              "asking it")  # fmt: skip
    if args.query is None:
        command = shlex.split(beeline_command(host, port))
        sys.stdout.flush()
        os.execv(command[0], command)
    statements = _split_statements(args.query)
    try:
        result = run_statements(host, port, statements)
    except ThriftSqlError as exc:
        progress(f"sql failed{_which_statement(statements, exc.statement)}: {exc}")
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


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse sql`` to the CLI's subcommands."""
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
