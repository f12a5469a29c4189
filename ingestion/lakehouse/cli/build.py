"""``lakehouse build``: ``dbt build`` with the project's profile against this LAKEHOUSE_DIR.

:func:`run_dbt` is also what ``ingest --build`` runs. On the ``local`` target dbt runs in this
process; while ``lakehouse serve`` holds the Derby metastore the build goes through that
server instead (the ``thrift`` target); on any other target dbt runs as a command.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from lakehouse.cli.common import derby_busy, progress, serving_derby
from lakehouse.paths import PROJECT_DIR, lakehouse_dir


def cmd_build(args: argparse.Namespace) -> int:
    """``dbt build`` with the project's profile against this LAKEHOUSE_DIR."""
    return run_dbt(["build", *args.dbt_args])


def run_dbt(dbt_args: list[str]) -> int:
    """Run dbt in the checkout with ``profiles/`` and an absolute ``LAKEHOUSE_DIR``: on the
    ``local`` target (dbt's session method) in this process, the Spark session started beside
    dbt's own start (:mod:`lakehouse.dbt_session`); on another target as a command. A build or
    run in LAKEHOUSE_THREADS threads unless its arguments say (``with_threads``)."""
    from lakehouse import dbt_session

    try:
        dbt_args = dbt_session.with_threads(dbt_args)
    except ValueError as exc:
        progress(f"{dbt_args[0]}: {exc}")
        return 2
    root = str(lakehouse_dir())
    args = [*dbt_args, "--profiles-dir", str(PROJECT_DIR / "profiles"), "--project-dir", str(PROJECT_DIR)]
    progress(f"running {' '.join(args)} (LAKEHOUSE_DIR={root})")
    if dbt_session.target_of(dbt_args) == "local":
        server = serving_derby(Path(root))
        if server is not None:
            return _run_dbt_through(server, dbt_args, root)
        if derby_busy(dbt_args[0], server_asked=True):
            return 2
        os.environ["LAKEHOUSE_DIR"] = root
        return dbt_session.run_dbt_here(args, PROJECT_DIR)
    dbt = Path(sys.executable).with_name("dbt")
    return subprocess.call([str(dbt), *args], cwd=PROJECT_DIR, env=dict(os.environ, LAKEHOUSE_DIR=root))


def _run_dbt_through(server: tuple[str, int], dbt_args: list[str], root: str) -> int:
    """Run dbt on the ``thrift`` target, through the ``lakehouse serve`` at ``server``.

    What ``lakehouse build`` does on the local target while that server holds the Derby
    metastore, which lets one process at a time open it: the build goes through the server's
    Spark rather than refusing to start. dbt's parse is kept in ``target/thrift`` (unless
    DBT_TARGET_PATH or --target-path says otherwise), so that alternating with local builds does
    not make each parse the whole project again.
    """
    from lakehouse import dbt_session

    host, port = server
    progress(
        f"{dbt_args[0]}: `lakehouse serve` on {host}:{port} has the Derby metastore of {root} open: "
        "running through it (--target thrift)"
    )
    env = dict(os.environ, LAKEHOUSE_DIR=root, LAKEHOUSE_THRIFT_HOST=host, LAKEHOUSE_THRIFT_PORT=str(port))
    if not any(arg == "--target-path" or arg.startswith("--target-path=") for arg in dbt_args):
        env.setdefault("DBT_TARGET_PATH", "target/thrift")
    args = [*dbt_session.with_target(dbt_args, "thrift"),
            "--profiles-dir", str(PROJECT_DIR / "profiles"), "--project-dir", str(PROJECT_DIR)]  # fmt: skip
    dbt = Path(sys.executable).with_name("dbt")
    return subprocess.call([str(dbt), *args], cwd=PROJECT_DIR, env=env)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse build`` to the CLI's subcommands."""
    build = sub.add_parser(
        "build",
        help="run `dbt build` with the project's profile (bronze -> silver -> gold)",
        description=(
            "Run `dbt build --profiles-dir profiles` in the project against LAKEHOUSE_DIR. "
            "Later runs process only what is new. Extra arguments go to dbt, e.g. "
            "`lakehouse build --select gold` or `lakehouse build --full-refresh`. On the local "
            "target dbt runs in this process, with the Spark session started while dbt starts. "
            "dbt runs in LAKEHOUSE_THREADS threads (default 2; `--threads N` wins)."
        ),
    )
    build.add_argument("dbt_args", nargs="*", help="arguments passed to dbt build")
    build.set_defaults(func=cmd_build)
