"""``lakehouse cluster``: a Spark standalone cluster on this machine (:mod:`lakehouse.local.cluster`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lakehouse.cli.common import progress
from lakehouse.local.cluster import (
    DEFAULT_PORT,
    DEFAULT_WEBUI_PORT,
    ClusterError,
    cluster_dir,
    describe,
    start,
    status,
    stop,
)


def cmd_cluster(args: argparse.Namespace) -> int:
    """``lakehouse cluster up|down|status``: see :func:`register`."""
    directory = Path(args.dir).expanduser().resolve() if args.dir else cluster_dir()
    try:
        if args.action == "up":
            if status(directory) is None:
                progress(
                    f"starting a Spark master on 127.0.0.1:{args.port} and {args.workers} worker(s) "
                    f"({args.worker_cores} core(s), {args.worker_memory} each) in {directory}"
                )
            info = start(
                args.port, args.webui_port, args.workers, args.worker_cores, args.worker_memory, directory,
            )  # fmt: skip
            progress(f"cluster is up: web UI {info.webui_url}, logs in {directory / 'logs'}")
            progress(f"run the lakehouse on it: export LAKEHOUSE_SPARK_MASTER={info.master_url}")
            print(info.master_url)
        elif args.action == "down":
            stopped = stop(directory)
            progress(f"cluster stopped (master pid {stopped.master_pid})" if stopped else "cluster was not running")
        else:
            info = status(directory)
            if info is None:
                progress(f"no cluster is running ({directory})")
                return 1
            print(describe(info))
    except ClusterError as exc:
        progress(str(exc))
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse cluster`` to the CLI's subcommands."""
    cmd = sub.add_parser(
        "cluster",
        help="start/stop a Spark standalone cluster (master + workers) on this machine",
        description=(
            "A Spark standalone master and workers from the pyspark wheel, on 127.0.0.1 only, "
            "detached until `down`. Point the lakehouse at it with "
            "LAKEHOUSE_SPARK_MASTER=spark://127.0.0.1:7077. Logs and work directories in "
            "LAKEHOUSE_CLUSTER_DIR (default .cache/cluster)."
        ),
    )
    cmd.add_argument("action", choices=("up", "down", "status"))
    cmd.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"master port (default: {DEFAULT_PORT})")
    cmd.add_argument(
        "--webui-port", type=int, default=DEFAULT_WEBUI_PORT,
        help=f"master web UI port; its /json is the cluster state (default: {DEFAULT_WEBUI_PORT})",
    )  # fmt: skip
    cmd.add_argument("--workers", type=int, default=2, help="number of workers (default: 2)")
    cmd.add_argument("--worker-cores", type=int, default=1, help="cores each worker offers (default: 1)")
    cmd.add_argument("--worker-memory", default="1g", help="memory each worker offers (default: 1g)")
    cmd.add_argument("--dir", metavar="PATH", help="cluster directory (pid file, logs, work)")
    cmd.set_defaults(func=cmd_cluster)
