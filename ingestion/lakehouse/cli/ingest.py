"""``lakehouse ingest``: land a dump file or Kafka topics in bronze, then build if asked.

A dump file is landed here in one batch (:func:`lakehouse.bronze.land`); Kafka topics by the
loader (:mod:`lakehouse.kafka_loader`). Both report conflicting records the same way
(:func:`lakehouse.bronze.conflicts_note`, :func:`lakehouse.bronze.conflicts_status`). With
``--build`` the landing is followed by ``lakehouse build`` (:func:`lakehouse.cli.build.run_dbt`)
in the same process and Spark session; with ``--follow`` too, the loader schedules the builds.
"""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path

from lakehouse.cli.build import run_dbt
from lakehouse.cli.common import derby_busy, progress
from lakehouse.paths import lakehouse_dir

FORMATS = (
    "dataworks", "drs-json", "drs-json-c", "cloudcanal-json", "canal-json", "debezium-json",
    "debezium-flat", "debezium-smt", "oms-json", "dataworks-v2", "shareplex-json",
    "oms-avro-json", "maxwell-json", "ogg-json", "aws-dms-json",
)  # fmt: skip


#: How often `lakehouse ingest --follow --build` builds, at most (seconds).
DEFAULT_BUILD_EVERY = 60.0


def cmd_ingest(args: argparse.Namespace) -> int:
    """Land a dump file or Kafka topics in bronze and print a one-line summary."""
    if bool(args.from_file) == bool(args.bootstrap_servers):
        progress("ingest needs exactly one of --from-file PATH or --bootstrap-servers HOST:PORT")
        return 2
    if (args.build_args or args.build_every is not None) and not args.build:
        progress("ingest: --build-args and --build-every go with --build")
        return 2
    if args.build_every is not None and not args.follow:
        progress("ingest: --build-every goes with --follow (without it, --build builds once, when caught up)")
        return 2
    if args.build_every is not None and args.build_every <= 0:
        progress(f"ingest: --build-every {args.build_every:g}: give a number of seconds above 0")
        return 2
    if args.test_every is not None and not (args.build and args.follow):
        progress("ingest: --test-every goes with --follow --build (a single `--build` runs the data "
                  "tests with its models, as `dbt build` does)")  # fmt: skip
        return 2
    if args.test_every is not None and args.test_every <= 0:
        progress(f"ingest: --test-every {args.test_every:g}: give a number of seconds above 0")
        return 2
    try:
        build_args = shlex.split(args.build_args or "")
    except ValueError as exc:
        progress(f"ingest: --build-args: {exc}")
        return 2
    if derby_busy("ingest"):
        return 2
    # with --test-every the builds leave the data tests out, and they run apart, as often as it says
    models_only = ["--exclude-resource-type", "test"] if args.test_every is not None else []
    build = (lambda: run_dbt(["build", *build_args, *models_only])) if args.build else None
    tests = (lambda: run_dbt(["test", *build_args])) if args.test_every is not None else None
    if args.from_file:
        status = _ingest_file(args)
        return build() if build is not None and status == 0 else status
    from lakehouse.kafka_loader.stream import ingest_kafka

    if args.follow and args.build_every is None:
        args.build_every = DEFAULT_BUILD_EVERY
    return ingest_kafka(args, build, tests)


def _ingest_file(args: argparse.Namespace) -> int:
    from lakehouse import bronze, file_source
    from lakehouse.session import get_spark

    path = Path(args.from_file).expanduser().resolve()
    if not path.is_file():
        progress(f"ingest: no such file: {path}")
        return 2
    started = time.monotonic()
    progress(f"starting Spark (LAKEHOUSE_DIR={lakehouse_dir()})")
    spark = get_spark("lakehouse-ingest")
    bronze.ensure_bronze(spark)
    progress(f"reading {path}")
    first = file_source.next_offset(spark, bronze.TABLE, args.topic) if args.topic else 0
    dump = file_source.read_dump(spark, str(path), args.topic or None, first)
    if dump.unrouted:
        progress(
            f"{path}: {dump.unrouted} line(s) are not kcat -J envelopes with valid coordinates; landed under "
            f"topic {file_source.UNROUTED_TOPIC}, which silver quarantines with the reason (use --topic for "
            "bare values). The first of them:"
        )
        for example in dump.unrouted_examples:
            progress(f"  {example}")
    result = bronze.land(spark, dump.records, fmt=args.format, source=f"file:{path}", ranges=dump.ranges)
    seconds = time.monotonic() - started
    print(
        f"ingest {path.name}: read {result.read}, landed {result.landed}, "
        f"skipped {result.skipped} as already landed{bronze.conflicts_note(result.conflicting)} "
        f"(batch {result.batch_id}, {seconds:.1f}s)"
    )
    return bronze.conflicts_status(result.conflicting, args.accept_conflicts, str(path), result.batch_id)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lakehouse ingest`` to the CLI's subcommands."""
    ingest = sub.add_parser(
        "ingest",
        help="land Kafka records (from a dump file or a broker) in bronze.kafka_records",
        description=(
            "Land Kafka records in bronze.kafka_records, byte-exact, once per "
            "(topic, partition, offset): records already landed are skipped. A record at a landed "
            "(topic, partition, offset) with another key or value is a conflict: bronze keeps its own, "
            "both go to bronze.kafka_conflicts, and the ingest exits 1 (see --accept-conflicts). A dump "
            "line that is not a kcat -C -J envelope with valid coordinates (not JSON, no offset, a "
            "negative partition, ...) lands under topic _lakehouse_unrouted and silver quarantines it "
            "with what it is; keys and values that are not UTF-8 land as they are and are quarantined. "
            "See docs/operations-bad-input.md."
        ),
    )
    src = ingest.add_argument_group("from a dump file")
    src.add_argument(
        "--from-file", metavar="PATH",
        help="one record per line: the JSON envelope of `kcat -C -J`, or with --topic the bare value",
    )  # fmt: skip
    src.add_argument(
        "--topic", metavar="NAME",
        help="lines are bare message values of this topic (partition 0, offsets appended)",
    )  # fmt: skip
    ingest.add_argument(
        "--accept-conflicts", action="store_true",
        help="exit 0 even when records conflict: their (topic, partition, offset) is landed with another "
        "key or value (bronze keeps its own version; both are kept in bronze.kafka_conflicts). "
        "Without it such an ingest lands everything else and exits 1",
    )  # fmt: skip
    ingest.add_argument(
        "--format", choices=FORMATS, metavar="NAME",
        help="format id of the records (else the topic->format seed, else detection); "
        f"one of: {', '.join(FORMATS)}",
    )  # fmt: skip
    kafka = ingest.add_argument_group("from Kafka")
    kafka.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka bootstrap servers")
    kafka.add_argument("--topics", metavar="T1,T2", help="comma-separated topics to read")
    kafka.add_argument("--topic-pattern", metavar="REGEX", help="read every topic matching REGEX")
    kafka.add_argument(
        "--follow", action="store_true",
        help="keep running and land new records every --trigger-interval (default: stop when caught up)",
    )  # fmt: skip
    kafka.add_argument(
        "--trigger-interval", default="10 seconds", metavar="DURATION",
        help="with --follow, how often to land new records (default: 10 seconds)",
    )  # fmt: skip
    kafka.add_argument(
        "--starting-offsets", default="earliest", metavar="earliest|latest|JSON",
        help="where a topic without a checkpoint starts (default: earliest)",
    )  # fmt: skip
    kafka.add_argument(
        "--max-offsets-per-trigger", type=int, default=2_000_000, metavar="N",
        help="records per micro-batch at most (default: 2000000)",
    )  # fmt: skip
    kafka.add_argument(
        "--fail-on-data-loss", choices=("true", "false"), default="true",
        help="stop when offsets were deleted by retention before landing (default: true)",
    )  # fmt: skip
    kafka.add_argument(
        "--kafka-option", action="append", default=[], metavar="KEY=VALUE",
        help="any Kafka client option, e.g. security.protocol=SASL_SSL; repeatable. "
        "VALUE may be env:NAME or file:PATH to read a secret",
    )  # fmt: skip
    kafka.add_argument(
        "--kafka-config", metavar="PATH",
        help="a properties file of Kafka client options (key=value lines)",
    )  # fmt: skip
    then = ingest.add_argument_group("then build")
    then.add_argument(
        "--build", action="store_true",
        help="then run `lakehouse build` in this process, on the Spark session the landing started "
        "(no second start); with --follow, every --build-every seconds while records land",
    )  # fmt: skip
    then.add_argument(
        "--build-args", metavar="ARGS", default="",
        help="arguments for that dbt build, as one string, e.g. \"--select silver+ --vars '{...}'\"",
    )  # fmt: skip
    then.add_argument(
        "--build-every", type=float, metavar="SECONDS",
        help=f"with --follow --build: build at most this often, when records landed since the last "
        f"build (default: {DEFAULT_BUILD_EVERY:g})",
    )  # fmt: skip
    then.add_argument(
        "--test-every", type=float, metavar="SECONDS",
        help="with --follow --build: the builds leave dbt's data tests out, and `dbt test` (with "
        "--build-args) runs them at most this often, after a build that passed since they last ran "
        "(default: every build runs them, as `dbt build` does). They check whole tables: at "
        "millions of changes they take longer than a small increment's models",
    )  # fmt: skip
    ingest.set_defaults(func=cmd_ingest)
