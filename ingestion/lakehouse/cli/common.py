"""What the ``lakehouse`` commands share: progress lines and the check for a busy Derby metastore.

The embedded Derby metastore lets one process at a time open it; ``ingest``, ``build`` and
``sql`` ask before they start a Spark driver whether another process holds it (a running
``lakehouse serve`` above all, which ``build`` and ``sql`` then go through), rather than let
Derby refuse only after the metastore client's many retries.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lakehouse.paths import lakehouse_dir


def progress(message: str) -> None:
    """One progress line on stderr (stdout is kept for what a script would capture)."""
    print(f"[lakehouse] {message}", file=sys.stderr, flush=True)


#: What to do instead when another process holds the Derby metastore, per command.
_DERBY_BUSY_HINTS = {
    "build": "If that is `lakehouse serve`, build through it: `lakehouse build --target thrift` "
             "with LAKEHOUSE_THRIFT_PORT set to its port. Otherwise stop it first.",
    "ingest": "Stop it (a lakehouse serve, sql or build) first, or keep the metastore in "
              "PostgreSQL (LAKEHOUSE_METASTORE_URL, see `lakehouse postgres`), which processes share.",
    "sql": "Stop it first, or keep the metastore in PostgreSQL (LAKEHOUSE_METASTORE_URL, see "
           "`lakehouse postgres`), which processes share.",
}  # fmt: skip


def serving_derby(root: Path) -> tuple[str, int] | None:
    """Host and port of the ``lakehouse serve`` that holds the Derby metastore of ``root`` now."""
    from lakehouse.serve import running_server
    from lakehouse.session import metastore_in_use, spark_conf, uses_derby

    if not uses_derby(spark_conf(root)) or not metastore_in_use(root):
        return None
    return running_server(root)


def derby_busy(command: str, *, server_asked: bool = False) -> bool:
    """Whether another process holds this lakehouse's Derby metastore; if so, say what to do.

    Asked before ``command`` starts a Spark driver, which Derby would refuse only after the
    metastore client's many retries and tens of thousands of lines of stack traces. A running
    ``lakehouse serve`` is said at once (``server_asked``: the caller has just found none);
    another holder is given a few seconds to let go (an ending process).
    """
    from lakehouse.session import derby_busy

    root = lakehouse_dir()
    if (server_asked or serving_derby(root) is None) and not derby_busy(root):
        return False
    progress(
        f"{command}: the Derby metastore of {root} is open in another process, and Derby lets "
        f"one process at a time open it. {_DERBY_BUSY_HINTS.get(command, 'Stop it first.')}"
    )
    return True

