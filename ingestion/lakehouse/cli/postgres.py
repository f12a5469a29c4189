"""``lakehouse postgres``: the local PostgreSQL server of a shared Hive metastore.

The server itself is :mod:`lakehouse.local.postgres`; this is its command line.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from lakehouse.cli.common import progress
from lakehouse.local.postgres import (
    DEFAULT_DATABASE,
    DEFAULT_PORT,
    PostgresError,
    bin_dir,
    default_port,
    ensure_database,
    metastore_env,
    postgres_dir,
    start,
    status,
    stop,
)


def _exports(env: dict[str, str]) -> str:
    return "\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items())


def cmd_postgres(args: argparse.Namespace) -> int:
    """``lakehouse postgres up|down|status|env|bin``: see :func:`register`."""
    directory = Path(args.dir).expanduser().resolve() if args.dir else postgres_dir()
    try:
        if args.action == "bin":
            print(bin_dir())
        elif args.action == "up":
            if status(directory) is None:
                progress(f"starting PostgreSQL on 127.0.0.1:{args.port or default_port()} ({directory})")
            info = start(args.port, directory)
            if ensure_database(info, args.database):
                progress(f"created database {args.database}: the metastore schema is made at Spark's first use")
            progress(f"PostgreSQL is up (pid {info.pid}); log: {directory / 'logs' / 'postgres.log'}")
            again = "".join([f" --dir {shlex.quote(str(directory))}" if args.dir else "",
                             f" --database {args.database}" if args.database != DEFAULT_DATABASE else ""])
            progress(f'use it as the metastore: eval "$(lakehouse postgres env{again})" (or export the lines below)')
            print(_exports(metastore_env(info, args.database)))
        elif args.action == "env":
            info = status(directory)
            if info is None:
                progress(f"PostgreSQL is not running ({directory}): lakehouse postgres up")
                return 1
            print(_exports(metastore_env(info, args.database)))
        elif args.action == "down":
            stopped = stop(directory)
            progress(f"PostgreSQL stopped (pid {stopped.pid})" if stopped else "PostgreSQL was not running")
        else:
            info = status(directory)
            if info is None:
                progress(f"PostgreSQL is not running ({directory})")
                return 1
            print(f"127.0.0.1:{info.port} pid {info.pid} dir {info.directory}")
    except PostgresError as exc:
        progress(str(exc))
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse postgres`` to the CLI's subcommands."""
    cmd = sub.add_parser(
        "postgres",
        help="start/stop a local PostgreSQL server for a shared Hive metastore",
        description=(
            "A local PostgreSQL server (Debian's postgresql package) on 127.0.0.1 for the Hive "
            "metastore, so that the loader, dbt, lakehouse serve and lakehouse sql share tables at "
            "the same time. `up` starts it (initdb at the first start), creates the database and "
            "prints the LAKEHOUSE_METASTORE_* variables to export; data in LAKEHOUSE_POSTGRES_DIR "
            "(default .cache/postgres)."
        ),
    )
    cmd.add_argument("action", choices=("up", "down", "status", "env", "bin"))
    cmd.add_argument(
        "--port", type=int, default=None, metavar="N",
        help=f"port on 127.0.0.1 (default: LAKEHOUSE_POSTGRES_PORT or {DEFAULT_PORT})",
    )  # fmt: skip
    cmd.add_argument(
        "--database", default=DEFAULT_DATABASE, metavar="NAME",
        help=f"metastore database to create (up) or print (env) (default: {DEFAULT_DATABASE})",
    )  # fmt: skip
    cmd.add_argument("--dir", metavar="PATH", help="server directory (data, logs, password)")
    cmd.set_defaults(func=cmd_postgres)
