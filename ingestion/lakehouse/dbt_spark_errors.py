"""dbt-spark's session cursor, with a failed query's Java error shortened to its messages.

This is the project's one change to dbt-spark in Python, made by ``lakehouse build`` (and the
tests' in-process builds) before dbt runs; a plain ``dbt build`` runs dbt-spark as it is.

Why: a query that fails in its tasks (a model's compile-time query, a data test, a model's
write) reaches dbt-spark's cursor as py4j's error, whose text is the Java exception with every
frame of the task's stack and the driver's: dbt printed some hundred lines for one failure (a
``cdc_topic_formats`` pattern that is not a regular expression: ``Unclosed group near index
10``, then 90 lines of frames). pyspark shortens the exceptions it knows (an analysis error)
but not a failed job's, and dbt-spark has no setting for it. What the statements run, and in
which session, is dbt-spark's own.
"""

from __future__ import annotations

from typing import Any

#: Lines of a Java stack trace in an error's text: frames, elisions, the driver's header.
_JAVA_STACK_LINE = ("\tat ", "\t... ", "Driver stacktrace:")


def shorten_java_errors() -> None:
    """Have dbt-spark's session cursor raise a query's Java error as dbt's runtime error with
    the exceptions' own lines only (:func:`java_error_text`). Done once per process."""
    from dbt.adapters.spark import session as dbt_spark_session

    cursor = dbt_spark_session.Cursor
    if getattr(cursor.execute, "shortens_java_errors", False):
        return
    for name in ("execute", "fetchall", "fetchone"):
        setattr(cursor, name, _shortened(getattr(cursor, name)))


def java_error_text(text: str) -> str:
    """An error's text without its Java stack frames: the exceptions' own lines only, and each
    cause whose message the exception's own does not carry already (a job's failure carries its
    task's)."""
    lines = text.splitlines()
    first_frame = next((i for i, line in enumerate(lines) if line.startswith(_JAVA_STACK_LINE)), len(lines))
    kept = lines[:first_frame]
    for line in lines[first_frame:]:
        if line.startswith("Caused by: ") and line[11:] not in "\n".join(kept):
            kept.append(line)
    return "\n".join(kept).strip()


def _shortened(method: Any) -> Any:
    """A method of dbt-spark's cursor raising a Java error as dbt's, in a few lines."""
    from dbt_common.exceptions import DbtRuntimeError
    from py4j.protocol import Py4JJavaError

    def shortened(self: Any, *args: Any) -> Any:
        try:
            return method(self, *args)
        except Py4JJavaError as exc:
            raise DbtRuntimeError(java_error_text(str(exc))) from exc

    shortened.shortens_java_errors = True  # type: ignore[attr-defined]
    return shortened
