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
    lakehouse source up|down|status|sql|bin postgres|mariadb
    lakehouse debezium run|jars [--connector postgres|mariadb]

Everything lives under ``LAKEHOUSE_DIR`` (default ``./lakehouse``): Delta tables, the
metastore and the Kafka checkpoints. Run from anywhere; ``build`` runs dbt in the checkout.

Each command is a module of this package with ``register(sub)``, which adds its parser, and
the ``cmd_<command>(args)`` that runs it; what they share is in :mod:`.common`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from lakehouse import __version__
from lakehouse.cli import build, cluster, debezium, ingest, kafka, postgres, serve, source, sql
from lakehouse.cli.build import run_dbt
from lakehouse.paths import lakehouse_dir

#: The commands, in the order ``lakehouse --help`` lists them.
COMMANDS = (ingest, build, sql, serve, kafka, postgres, cluster, source, debezium)


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

    for command in COMMANDS:
        command.register(sub)
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

