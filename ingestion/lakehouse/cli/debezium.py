"""``lakehouse debezium``: Debezium's embedded engine from a local source database into Kafka.

Captures a database that ``lakehouse source up`` started (:mod:`lakehouse.cli.source`, whose
options it shares) with :mod:`lakehouse.local.debezium`, into the broker of ``lakehouse kafka
up`` unless ``--bootstrap-servers`` names another.
"""

from __future__ import annotations

import argparse

from lakehouse.cli.common import progress
from lakehouse.cli.source import DATABASES, add_source_options, server_dir
from lakehouse.local import HarnessError, broker, debezium, mariadb, pg_source


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
        directory = server_dir(args)
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
    """Add ``lakehouse debezium`` to the CLI's subcommands."""
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
    add_source_options(dbz)
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
