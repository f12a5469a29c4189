"""``lakehouse source``: the local PostgreSQL and MariaDB source databases of the Debezium harness.

The harness is :mod:`lakehouse.local` (docs/real-databases.md); ``lakehouse debezium``
(:mod:`lakehouse.cli.debezium`) captures the databases started here, and shares their options
(:func:`add_source_options`, :func:`server_dir`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lakehouse.cli.common import progress
from lakehouse.local import HarnessError, mariadb, pg_source

DATABASES = ("postgres", "mariadb")


def server_dir(args: argparse.Namespace) -> Path:
    """The folder of the source server ``args`` name: ``--dir``, else its kind's default."""
    if args.dir:
        return Path(args.dir).expanduser().resolve()
    return pg_source.source_dir() if args.database_kind == "postgres" else mariadb.source_dir()


def cmd_source(args: argparse.Namespace) -> int:
    """``lakehouse source up|down|status|sql|bin postgres|mariadb``."""
    directory = server_dir(args)
    pg = args.database_kind == "postgres"
    module = pg_source if pg else mariadb
    try:
        if args.action == "bin":
            if pg:
                from lakehouse.local import postgres

                print(postgres.bin_dir())
            else:
                print("\n".join(mariadb.programs().values()))
        elif args.action == "up":
            port = args.port or module.default_port()
            if module.status(directory) is None:
                progress(f"starting {args.database_kind} on 127.0.0.1:{port} ({directory})")
            info = module.start(args.port, directory, args.database)
            progress(f"{args.database_kind} is up (pid {info.pid}), database {args.database}; "
                     f"Debezium: lakehouse debezium run --connector {args.database_kind}")
            print(f"127.0.0.1:{info.port}")
        elif args.action == "down":
            stopped = module.stop(directory)
            progress(f"{args.database_kind} stopped (pid {stopped.pid})" if stopped
                     else f"{args.database_kind} was not running ({directory})")
        elif args.action == "status":
            info = module.status(directory)
            if info is None:
                progress(f"{args.database_kind} is not running ({directory})")
                return 1
            print(f"127.0.0.1:{info.port} pid {info.pid} dir {info.directory}")
        else:
            info = module.status(directory)
            if info is None:
                progress(f"{args.database_kind} is not running ({directory}): lakehouse source up {args.database_kind}")
                return 1
            text = args.sql if args.sql is not None else sys.stdin.read()
            sys.stdout.write(module.sql(info, text, args.database))
    except HarnessError as exc:
        progress(str(exc))
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse source`` to the CLI's subcommands."""
    source = sub.add_parser(
        "source",
        help="start/stop a local PostgreSQL or MariaDB source database for the Debezium harness",
        description=(
            "Local source databases for trying the lakehouse on real change data "
            "(docs/real-databases.md). `up` starts Debian's PostgreSQL 15 (wal_level=logical) or "
            "MariaDB 10.11 (ROW binlog, full images) on 127.0.0.1 as its own OS user and creates the "
            "database; `sql` runs SQL in it (from the argument or stdin); `bin` prints the server "
            "programs found. Data in .cache/sources/<kind> (LAKEHOUSE_SOURCE_POSTGRES_DIR, "
            "LAKEHOUSE_SOURCE_MARIADB_DIR)."
        ),
        epilog="Example: lakehouse source up postgres; "
        "lakehouse source sql postgres 'create table t (id int primary key)'",
    )
    source.add_argument("action", choices=("up", "down", "status", "sql", "bin"))
    source.add_argument("database_kind", choices=DATABASES, metavar="postgres|mariadb")
    source.add_argument("sql", nargs="?", help="with `sql`: the statements to run (default: read stdin)")
    add_source_options(source)
    source.add_argument("--port", type=int, metavar="N", help=(
        f"port on 127.0.0.1 (default: {pg_source.DEFAULT_PORT} for postgres, {mariadb.DEFAULT_PORT} for mariadb, "
        "or LAKEHOUSE_SOURCE_<KIND>_PORT)"))  # fmt: skip
    source.set_defaults(func=cmd_source)


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """The options that say which source server: ``lakehouse source`` and ``lakehouse debezium``."""
    parser.add_argument("--database", default=pg_source.DEFAULT_DATABASE, metavar="NAME",
                        help=f"the source database (default: {pg_source.DEFAULT_DATABASE})")
    parser.add_argument("--dir", metavar="PATH", help="the source server's folder (data, logs, offsets)")
