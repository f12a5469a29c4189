"""``lakehouse source ...`` and ``lakehouse debezium ...``: the harness's command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lakehouse.local import HarnessError, broker, debezium, mariadb, pg_source, progress

DATABASES = ("postgres", "mariadb")


def _dir(args: argparse.Namespace) -> Path:
    if args.dir:
        return Path(args.dir).expanduser().resolve()
    return pg_source.source_dir() if args.database_kind == "postgres" else mariadb.source_dir()


def cmd_source(args: argparse.Namespace) -> int:
    """``lakehouse source up|down|status|sql|bin postgres|mariadb``."""
    directory = _dir(args)
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


def _properties(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise HarnessError(f"--property {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def cmd_debezium(args: argparse.Namespace) -> int:
    """``lakehouse debezium jars|run``."""
    try:
        if args.action == "jars":
            print(debezium.ensure_program())
            return 0
        directory = _dir(args)
        pg = args.database_kind == "postgres"
        module = pg_source if pg else mariadb
        info = module.status(directory)
        if info is None:
            raise HarnessError(
                f"{args.database_kind} is not running ({directory}): lakehouse source up {args.database_kind}"
            )
        bootstrap = args.bootstrap_servers
        if not bootstrap:
            running = broker.status()
            if running is None:
                raise HarnessError(f"no Kafka broker runs from {broker.broker_dir()}: lakehouse kafka up, "
                                   "or give --bootstrap-servers")
            bootstrap = running.bootstrap_servers
        name = args.name or f"lakehouse-{args.database_kind}"
        prefix = args.topic_prefix or ("pg" if pg else "maria")
        props = debezium.engine_properties(
            args.database_kind, module.connector_properties(info, args.database), directory / "debezium" / name,
            name, prefix, _properties(args.property),
        )  # fmt: skip
        state = directory / "debezium" / name
        progress(f"Debezium {args.database_kind} -> {bootstrap}, topics {prefix}.*; offsets in {state}")
        debezium.run(props, bootstrap, directory / "debezium" / name, args.until_idle)
    except HarnessError as exc:
        progress(str(exc))
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse source`` and ``lakehouse debezium`` to the CLI's subcommands."""
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
    _common(source)
    source.add_argument("--port", type=int, metavar="N", help=(
        f"port on 127.0.0.1 (default: {pg_source.DEFAULT_PORT} for postgres, {mariadb.DEFAULT_PORT} for mariadb, "
        "or LAKEHOUSE_SOURCE_<KIND>_PORT)"))  # fmt: skip
    source.set_defaults(func=cmd_source)

    dbz = sub.add_parser(
        "debezium",
        help="run Debezium (embedded engine, 3.5.0.Final) from a local source database into Kafka",
        description=(
            "`run` captures the changes of a source database started by `lakehouse source up` with "
            "Debezium's embedded engine and produces them to Kafka as Kafka Connect's JsonConverter "
            "writes them (schemas enabled; topic <prefix>.<schema or database>.<table>), then "
            "`lakehouse ingest --format debezium-json` lands them. Offsets are kept under the "
            "source's folder: a second run resumes where the last stopped. `jars` resolves "
            "Debezium from Maven Central and compiles the harness (make debezium-jars)."
        ),
        epilog=(
            "Example: lakehouse debezium run --connector postgres --until-idle 5; "
            "lakehouse ingest --bootstrap-servers 127.0.0.1:9092 --topic-pattern 'pg\\..*' --format debezium-json"
        ),
    )
    dbz.add_argument("action", choices=("run", "jars"))
    dbz.add_argument("--connector", dest="database_kind", choices=DATABASES, default="postgres",
                     help="which local source to capture (default: postgres)")
    _common(dbz)
    dbz.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                     help="Kafka to produce to (default: the broker of `lakehouse kafka up`)")
    dbz.add_argument("--until-idle", type=float, metavar="SECONDS",
                     help="stop once the snapshot is done and no event came for SECONDS (default: run until Ctrl-C)")
    dbz.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                     help="any Debezium engine or connector option, e.g. transforms=unwrap; repeatable; wins "
                     "over the harness's own")
    dbz.add_argument("--name", metavar="NAME",
                     help="engine name (default lakehouse-<kind>): its offsets folder and, for postgres, "
                     "its replication slot and publication")
    dbz.add_argument("--topic-prefix", metavar="PREFIX", help="Debezium's topic.prefix (default: pg or maria)")
    dbz.set_defaults(func=cmd_debezium)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database", default=pg_source.DEFAULT_DATABASE, metavar="NAME",
                        help=f"the source database (default: {pg_source.DEFAULT_DATABASE})")
    parser.add_argument("--dir", metavar="PATH", help="the source server's folder (data, logs, offsets)")
