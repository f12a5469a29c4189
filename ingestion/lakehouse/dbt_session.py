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
the JVM's own start keeps both cores of a small machine busy.

Other targets (``--target thrift``, ``DBT_TARGET``) have no session to start: the caller runs
dbt as a command of its own for them, as before.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any


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
    # after the start: it imports dbt-spark's adapter, which dbt's start would import anyway
    reuse_running_session()
    from dbt.cli.exceptions import DbtUsageException
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke(dbt_args)
    starter.join()
    if isinstance(result.exception, DbtUsageException):
        # dbt's command prints these itself; its runner leaves them to the caller
        print(f"Error: {result.exception}", file=sys.stderr)
    if result.exception is not None:
        return 2
    return 0 if result.success else 1


def reuse_running_session() -> None:
    """Have dbt-spark's session cursor run each statement on the Spark session this process
    already runs, as it is.

    Why: dbt-spark's ``Cursor.execute`` asks ``SparkSession.builder`` for the session at every
    statement, with the profile's 56 ``server_side_parameters``, and getting an existing session
    so applies each runtime setting to it again (a Java map built entry by entry over py4j),
    which costs more than most statements themselves, at every one of a build's hundred or so.
    The session this process runs was started with those very settings (:mod:`lakehouse.session`;
    tests/python/test_profile.py keeps the profile's equal to them), so they are there already.
    Until a session runs (dbt's first statement may come before the thread of
    :func:`run_dbt_here` has started it), and for a statement with parameters, dbt-spark's own
    ``execute`` runs. A plain ``dbt build`` keeps it
    throughout. Done once per process.

    A ``describe history <table> limit <n>`` (a model's read of a table's newest commits) is
    answered on the driver without Delta's Spark job: :mod:`lakehouse.delta_history`.
    """
    from dbt.adapters.spark import session as dbt_spark_session
    from dbt_common.exceptions import DbtRuntimeError
    from lakehouse import delta_history
    from py4j.protocol import Py4JJavaError
    from pyspark.sql import SparkSession
    from pyspark.sql.utils import AnalysisException

    cursor = dbt_spark_session.Cursor
    if getattr(cursor.execute, "reuses_running_session", False):
        return
    builder_execute = cursor.execute

    def execute(self: Any, sql: str, *parameters: Any) -> None:
        # the builder's own record of the session it made or was given (getOrCreate reads it)
        session = SparkSession._instantiatedSession  # noqa: SLF001
        if parameters or session is None or session._sc._jsc is None:  # noqa: SLF001
            builder_execute(self, sql, *parameters)
            return
        session = session_of_this_thread(session)
        # a model's read of a table's newest commits, without Delta's Spark job (delta_history)
        history = delta_history.answer(session, sql)
        if history is not None:
            self._df = history  # noqa: SLF001 - read as dbt-spark reads a frame: schema, collect, take
            return
        try:
            self._df = session.sql(sql)  # noqa: SLF001 - dbt-spark's cursor keeps its frame here
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc
        except Py4JJavaError as exc:  # a statement that runs at once (a model's create) and fails
            raise DbtRuntimeError(java_error_text(str(exc))) from exc

    execute.reuses_running_session = True  # type: ignore[attr-defined]
    cursor.execute = execute
    for name in ("fetchall", "fetchone"):
        setattr(cursor, name, _without_java_stacks(getattr(cursor, name)))


_THREAD_SESSIONS = threading.local()


def session_of_this_thread(session: Any) -> Any:
    """The Spark session the statements of this thread run in: ``session`` itself in the main
    thread (dbt's start, its catalog, the on-run hooks), else one of the thread's own, a
    ``newSession()`` of it, kept for the thread's life.

    Why: a MERGE sets its join in a setting of the session it runs in
    (``cdc_merge_by_hash_join``), and a compaction its file sizes (``cdc_optimize_files``); each
    model sets them and puts them back around its own statements. Two dbt threads sharing one
    session would plan each other's statements with them, when the history and the table
    columns run side by side (slower plans, not other rows: the models' state is in
    ``meta.cdc_build_progress``, not in the session). A session of its own shares the driver, its
    SparkContext, the metastore and the cached tables, and has its own settings and temporary
    views. The settings the driver started with (the profile's) are the SparkContext's, which a
    new session starts from.
    """
    if threading.current_thread() is threading.main_thread():
        return session
    own = getattr(_THREAD_SESSIONS, "pair", None)
    if own is None or own[0] is not session:
        own = (session, session.newSession())
        _THREAD_SESSIONS.pair = own
    return own[1]


#: dbt threads of a `lakehouse build` when neither --threads nor LAKEHOUSE_THREADS says.
DEFAULT_THREADS = 2


def with_threads(dbt_args: list[str]) -> list[str]:
    """``dbt_args`` with ``--threads`` from LAKEHOUSE_THREADS (default 2) for a ``build`` or a
    ``run`` that does not give its own.

    Why two: an increment's history and table columns depend on silver alone, and each is a
    few small Spark jobs with as much time again in the driver (planning, Delta's log, the
    metastore), so two of them side by side keep both cores of a small machine busy where one
    thread leaves one idle. Each thread runs in a session of its own
    (:func:`session_of_this_thread`), or through the Thrift server in a connection of its own.
    """
    if not dbt_args or dbt_args[0] not in ("build", "run"):
        return dbt_args
    if any(arg == "--threads" or arg.startswith("--threads=") for arg in dbt_args):
        return dbt_args
    threads = os.environ.get("LAKEHOUSE_THREADS", "").strip() or str(DEFAULT_THREADS)
    if not threads.isdigit() or int(threads) < 1:
        raise ValueError(f"LAKEHOUSE_THREADS={threads!r}: give a whole number of dbt threads, 1 or more")
    return [*dbt_args, "--threads", threads]


#: Lines of a Java stack trace in an error's text: frames, elisions, the driver's header.
_JAVA_STACK_LINE = ("\tat ", "\t... ", "Driver stacktrace:")


def java_error_text(text: str) -> str:
    """An error's text without its Java stack frames: the exceptions' own lines only.

    A query that fails as dbt fetches its rows (a compile-time query of a model, a data test)
    raised py4j's error, whose text is the Java exception with every frame of the task's stack
    and the driver's: dbt printed some hundred lines for one failure (a `cdc_topic_formats`
    pattern that is not a regular expression: `Unclosed group near index 10`, then 90 lines
    of frames). Left: the exception's message and its causes', each once."""
    lines = text.splitlines()
    first_frame = next((i for i, line in enumerate(lines) if line.startswith(_JAVA_STACK_LINE)), len(lines))
    kept = lines[:first_frame]
    for line in lines[first_frame:]:
        # a cause whose message the exception's own does not carry already (a job's failure
        # carries its task's)
        if line.startswith("Caused by: ") and line[11:] not in "\n".join(kept):
            kept.append(line)
    return "\n".join(kept).strip()


def _without_java_stacks(fetch: Any) -> Any:
    """dbt-spark's cursor ``fetch`` raising a failed query's error as dbt's, in a few lines."""
    from dbt_common.exceptions import DbtRuntimeError
    from py4j.protocol import Py4JJavaError

    def fetched(self: Any) -> Any:
        try:
            return fetch(self)
        except Py4JJavaError as exc:
            raise DbtRuntimeError(java_error_text(str(exc))) from exc

    return fetched
