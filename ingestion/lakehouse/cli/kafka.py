"""``lakehouse kafka``: the local single-node Kafka broker (:mod:`lakehouse.local.broker`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from lakehouse.cli.common import progress


def cmd_kafka(args: argparse.Namespace) -> int:
    """Run the project's local single-node Kafka broker (see :mod:`lakehouse.local.broker`)."""
    from lakehouse.local import broker

    directory = Path(args.dir).expanduser().resolve() if args.dir else broker.broker_dir()
    try:
        if args.action == "jars":
            print(broker.ensure_jars())
        elif args.action == "up":
            if broker.status(directory) is None:
                progress(f"starting Kafka (KRaft, single node) in {directory}")
            info = broker.start(
                args.port, directory, sasl_port=args.sasl_port,
                sasl_password=os.environ.get("LAKEHOUSE_KAFKA_SASL_PASSWORD"),
            )  # fmt: skip
            if info.sasl_port:
                progress(
                    f"SASL_PLAINTEXT (PLAIN, user {broker.SASL_USER}) on "
                    f"{info.sasl_bootstrap_servers}"
                )
            progress(f"Kafka is up (pid {info.pid}); log: {directory / 'logs' / 'server.log'}")
            print(info.bootstrap_servers)
        elif args.action == "down":
            stopped = broker.stop(directory)
            progress(f"Kafka stopped (pid {stopped.pid})" if stopped else "Kafka was not running")
        else:
            info = broker.status(directory)
            if info is None:
                progress(f"Kafka is not running ({directory})")
                return 1
            print(f"{info.bootstrap_servers} pid {info.pid} dir {info.directory}")
    except broker.BrokerError as exc:
        progress(str(exc))
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse kafka`` to the CLI's subcommands."""
    kafka_cmd = sub.add_parser(
        "kafka",
        help="start/stop the local single-node Kafka broker for development and tests",
        description=(
            "A real Apache Kafka broker (KRaft, one node) from Maven Central jars, listening on "
            "127.0.0.1 only. Data and logs live in LAKEHOUSE_KAFKA_DIR (default .cache/kafka); "
            "topics survive down/up."
        ),
    )
    kafka_cmd.add_argument("action", choices=("up", "down", "status", "jars"))
    kafka_cmd.add_argument(
        "--port", type=int, default=None, metavar="N",
        help="client port on 127.0.0.1 (default: LAKEHOUSE_KAFKA_PORT or 9092)",
    )  # fmt: skip
    kafka_cmd.add_argument(
        "--sasl-port", type=int, default=None, metavar="N",
        help="also listen with SASL_PLAINTEXT/PLAIN on N (user lakehouse, password from "
        "LAKEHOUSE_KAFKA_SASL_PASSWORD)",
    )  # fmt: skip
    kafka_cmd.add_argument("--dir", metavar="PATH", help="broker directory (data, logs, pid file)")
    kafka_cmd.set_defaults(func=cmd_kafka)
