"""``lakehouse build`` on the ``local`` target (dbt's session method, embedded or on a cluster
through LAKEHOUSE_SPARK_MASTER): dbt in this process, the Spark session started beside it.

Why: dbt's ``session`` method starts the Spark driver at its first statement, after Python
has imported dbt, registered the adapter and read the project, and the driver then takes
about as long again to start and open the metastore. Nothing in the
one needs the other: here a thread starts the session of :mod:`lakehouse.session` (the
profile's settings, kept equal by tests/python/test_profile.py) and opens the metastore while
dbt starts in the main thread; dbt's session method then gets the running session
(``SparkSession.builder.getOrCreate``). Every build process, the first as much as one with
nothing new, reaches its first model sooner, though by less than all of dbt's start, since
the JVM's own start keeps both cores of a small machine busy. dbt-spark's cursor then runs
every statement as it does in a plain ``dbt build``; only its Java errors are shortened
(:mod:`lakehouse.dbt_spark_errors`).

Other targets (``--target thrift``, ``DBT_TARGET``) have no session to start: the caller runs
dbt as a command of its own for them, as before.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path


def target_of(dbt_args: list[str]) -> str:
    """The dbt target these arguments select: ``--target``/``-t``, else ``DBT_TARGET``, else
    the profile's default (``local``)."""
    for index, arg in enumerate(dbt_args):
        if arg in ("--target", "-t") and index + 1 < len(dbt_args):
            return dbt_args[index + 1]
        if arg.startswith("--target="):
            return arg.split("=", 1)[1]
    return os.environ.get("DBT_TARGET", "local")


def with_target(dbt_args: list[str], target: str) -> list[str]:
    """``dbt_args`` with ``target`` as the only target they select."""
    kept: list[str] = []
    skip = False
    for arg in dbt_args:
        if skip:
            skip = False
        elif arg in ("--target", "-t"):
            skip = True
        elif not arg.startswith("--target="):
            kept.append(arg)
    return [*kept, "--target", target]


def _start_session() -> None:
    """Start the lakehouse's Spark session and open its metastore (the first statement).

    A failure is left to dbt: its first statement starts the session again and reports why,
    as it would have without this thread."""
    try:
        from lakehouse.session import get_spark

        get_spark("lakehouse-build").sql("show databases").collect()
    except Exception:  # noqa: BLE001, S110 - reported by dbt's own start (above)
        pass


def run_dbt_here(dbt_args: list[str], project_dir: Path) -> int:
    """Run ``dbt <dbt_args>`` in this process, in ``project_dir``, with the session started
    beside dbt's own start. Exit status as dbt's command gives it: 0 success, 1 a node failed,
    2 dbt could not run.
    """
    os.chdir(project_dir)
    starter = threading.Thread(target=_start_session, name="lakehouse-spark-start", daemon=True)
    starter.start()
    from dbt.cli.exceptions import DbtUsageException
    from dbt.cli.main import dbtRunner
    from lakehouse import dbt_spark_errors

    # after the start: it imports dbt-spark's adapter, which dbt's start would import anyway
    dbt_spark_errors.shorten_java_errors()

    result = dbtRunner().invoke(dbt_args)
    starter.join()
    if isinstance(result.exception, DbtUsageException):
        # dbt's command prints these itself; its runner leaves them to the caller
        print(f"Error: {result.exception}", file=sys.stderr)
    if result.exception is not None:
        return 2
    return 0 if result.success else 1


#: dbt threads of a `lakehouse build` when neither --threads nor LAKEHOUSE_THREADS says.
DEFAULT_THREADS = 2


def with_threads(dbt_args: list[str]) -> list[str]:
    """``dbt_args`` with ``--threads`` from LAKEHOUSE_THREADS (default 2) for a ``build`` or a
    ``run`` that does not give its own.

    Why two: an increment's history and table columns depend on silver alone, and each is a
    few small Spark jobs with as much time again in the driver (planning, Delta's log, the
    metastore), so two of them side by side keep both cores of a small machine busy where one
    thread leaves one idle. On the session method both threads run in the one Spark session of
    the process (dbt-spark's), through the Thrift server each in a connection of its own.
    """
    if not dbt_args or dbt_args[0] not in ("build", "run"):
        return dbt_args
    if any(arg == "--threads" or arg.startswith("--threads=") for arg in dbt_args):
        return dbt_args
    threads = os.environ.get("LAKEHOUSE_THREADS", "").strip() or str(DEFAULT_THREADS)
    if not threads.isdigit() or int(threads) < 1:
        raise ValueError(f"LAKEHOUSE_THREADS={threads!r}: give a whole number of dbt threads, 1 or more")
    return [*dbt_args, "--threads", threads]
