"""``lakehouse serve``: Spark's Thrift JDBC/ODBC server on the lakehouse (:mod:`lakehouse.serve`)."""

from __future__ import annotations

import argparse


def cmd_serve(args: argparse.Namespace) -> int:
    """Spark's Thrift JDBC/ODBC server on the lakehouse (see :mod:`lakehouse.serve`)."""
    from lakehouse.serve import serve

    return serve(args.host, args.port)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse serve`` to the CLI's subcommands."""
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
