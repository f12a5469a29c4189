"""The loader's streaming query: from ``lakehouse ingest --bootstrap-servers ...`` to its summary.

:func:`ingest_kafka` checks the options, finds or starts the subscription's checkpoint, checks
that the cluster answers and has the topics, starts Spark's Kafka source into the sink
(:mod:`.sink`), prints each batch's progress until caught up (or, with ``--follow``, until a
signal), runs the builds of ``--build`` when :mod:`.builds` says they are due, and prints a
one-line summary.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse import bronze
from lakehouse.kafka_loader import LoaderError, first_lines, progress
from lakehouse.kafka_loader.builds import Builds
from lakehouse.kafka_loader.offsets import committed_batches, describe_progress
from lakehouse.kafka_loader.options import (
    ClientOptions,
    checkpoint_name,
    client_options,
    parse_topics,
    source_options,
)
from lakehouse.kafka_loader.sink import Totals, make_sink
from lakehouse.paths import lakehouse_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession

#: How long the connection check waits for the cluster to list its topics.
CONNECT_TIMEOUT_S = 30


def _check_connection(spark: SparkSession, client: ClientOptions, topics: list[str],
                      pattern: str | None) -> None:  # fmt: skip
    """Fail fast and clearly when the cluster is unreachable or refuses us, or topics are missing.

    Uses the JVM's Kafka AdminClient with exactly the options Spark will use, so SASL/SSL
    settings are checked as Spark sees them (not as a different client library would).
    """
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    props = jvm.java.util.Properties()
    for key, value in client.options.items():
        props.setProperty(key, value)
    props.setProperty("default.api.timeout.ms", str(CONNECT_TIMEOUT_S * 1000))
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        seconds = jvm.java.util.concurrent.TimeUnit.SECONDS
        names = set(admin.listTopics().names().get(CONNECT_TIMEOUT_S, seconds))
    except Exception as exc:  # noqa: BLE001 - py4j wraps the Java exception
        reason = client.scrub(_java_cause(exc))
        raise LoaderError(
            f"cannot list topics on {client.options['bootstrap.servers']} within "
            f"{CONNECT_TIMEOUT_S}s: {reason}"
        ) from None
    finally:
        admin.close(jvm.java.time.Duration.ofSeconds(5))
    if topics:
        missing = [t for t in topics if t not in names]
        if missing:
            # Spark's Kafka source would retry for a while and then fail with
            # UnknownTopicOrPartitionException without naming the topic; say it up front.
            raise LoaderError(
                f"topic(s) {', '.join(missing)} do not exist on "
                f"{client.options['bootstrap.servers']} (existing: "
                f"{', '.join(sorted(t for t in names if not t.startswith('__'))) or 'none'})"
            )
    elif pattern:
        matching = sorted(t for t in names if re.fullmatch(pattern, t))
        progress(f"topics matching {pattern!r} now: {', '.join(matching) or 'none'}")


def _java_cause(exc: BaseException) -> str:
    """The Java exception line of a py4j error (its first line only names the py4j call)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    causes = [line for line in lines if "Exception:" in line or "Error:" in line]
    # The innermost cause says most ("SaslAuthenticationException: Authentication failed...").
    return (causes[-1] if causes else lines[0] if lines else type(exc).__name__).lstrip(": ")


def ingest_kafka(args: argparse.Namespace, build: Callable[[], int] | None = None,
                 tests: Callable[[], int] | None = None) -> int:  # fmt: skip
    """``lakehouse ingest --bootstrap-servers ...``: land the topics, print a summary; exit code.

    ``build`` (``--build``): run once the topics are caught up, in this process and Spark
    session; with ``--follow``, every ``--build-every`` seconds while records keep landing
    (:class:`Builds`). The exit code is then the last build's when the landing succeeded.
    ``tests`` (``--test-every``, with ``--follow``): the data tests, run apart from those
    builds, at most every ``--test-every`` seconds; a failure of the last ones sets the exit
    code when the last build passed.
    """
    started = time.monotonic()
    client = ClientOptions({})
    try:
        if getattr(args, "topic", None):
            raise LoaderError("--topic is for --from-file; with Kafka use --topics T1,T2")
        topics = parse_topics(args.topics)
        if bool(topics) == bool(args.topic_pattern):
            raise LoaderError("give exactly one of --topics T1,T2 or --topic-pattern REGEX")
        if args.topic_pattern:
            try:
                re.compile(args.topic_pattern)
            except re.error as exc:
                raise LoaderError(f"--topic-pattern: {exc}") from None
        client = client_options(args)
        options = source_options(args, client, topics)
        name = checkpoint_name(topics, args.topic_pattern)
    except LoaderError as exc:
        progress(f"ingest kafka: {client.scrub(str(exc))}")
        return 2
    checkpoint = lakehouse_dir() / "checkpoints" / name
    subscription = ",".join(topics) if topics else f"pattern {args.topic_pattern!r}"
    shown = " ".join(f"{k}={v}" for k, v in sorted(client.masked().items()))
    progress(f"ingest kafka: {subscription} ({shown})")
    planned, committed = committed_batches(checkpoint)
    if planned is None:
        progress(f"new checkpoint {checkpoint} (starting offsets: {args.starting_offsets})")
    else:
        done = f"last committed batch {committed}" if committed is not None else "none committed"
        progress(f"resuming from checkpoint {checkpoint} ({done})")
        if committed is None or planned > committed:
            progress(
                f"batch {planned} was interrupted before its commit: it runs again and "
                "records it had already landed are skipped"
            )
    return _run(args, client, options, topics, checkpoint, started, build, tests)



def _run(args: argparse.Namespace, client: ClientOptions, options: dict[str, str],
         topics: list[str], checkpoint: Path, started: float,
         build: Callable[[], int] | None = None, tests: Callable[[], int] | None = None) -> int:  # fmt: skip
    from lakehouse.session import get_spark

    progress(f"starting Spark (LAKEHOUSE_DIR={lakehouse_dir()})")
    spark = get_spark("lakehouse-ingest-kafka")
    # Delta rebuilds its snapshot after every commit, by default in 50 tasks: on a small
    # machine that alone is a noticeable cost per micro-batch. Size it to the cores we have.
    spark.conf.set(
        "spark.databricks.delta.snapshotPartitions",
        str(max(2, spark.sparkContext.defaultParallelism)),
    )
    # Source options end up in plan descriptions; hide secret ones there too.
    spark.conf.set(
        "spark.sql.redaction.options.regex",
        "(?i)url|password|secret|jaas|token|credential|key\\.password|keystore|truststore",
    )
    planned, committed = committed_batches(checkpoint)
    pending = planned is not None and (committed is None or planned > committed)
    totals = Totals(replay=planned if pending else None)
    builds = (Builds(build, args.build_every, totals, tests, getattr(args, "test_every", None),
                      read_ahead=lambda: bronze.read_ahead(spark))
              if build is not None and args.follow else None)  # fmt: skip
    stop_signal: list[int] = []

    def request_stop(signum: int, _frame: Any) -> None:
        stop_signal.append(signum)

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        _check_connection(spark, client, topics, args.topic_pattern)
        bronze.ensure_bronze(spark)
        # The loader reports a failed query itself (first lines, secrets scrubbed); Spark's own
        # ERROR line with the whole stack trace would only repeat it.
        _quiet_logger(spark, "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution")
        restarts = 0
        while True:
            try:
                _watch(_start_query(spark, args, options, checkpoint, totals), stop_signal, builds)
                break
            except Exception as exc:
                if not _is_replay_metrics_bug(exc) or restarts >= MAX_BUG_RESTARTS:
                    raise
                restarts += 1
                progress(
                    "Spark's Kafka source failed to report progress after re-running the "
                    "interrupted batch (SPARK-55271 in Spark 4.1.1); that batch is landed and "
                    "committed, continuing"
                )
    except LoaderError as exc:
        progress(f"ingest kafka: {client.scrub(str(exc))}")
        return 1
    except Exception as exc:  # noqa: BLE001 - StreamingQueryException, Py4JJavaError, ...
        progress(f"ingest kafka failed: {first_lines(client.scrub(str(exc)))}")
        _print_summary(totals, checkpoint, started, failed=True)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _print_summary(totals, checkpoint, started, failed=False)
    if bronze.conflicts_status(totals.conflicting, getattr(args, "accept_conflicts", False), "kafka"):
        # no build on a lakehouse fed from two histories until someone has looked
        if builds is not None:
            progress(builds.summary())
        return 1
    if builds is not None:
        progress(builds.summary())
        return builds.status
    if stop_signal and not args.follow:
        progress("stopped before catching up: run the same command again to continue")
        return 1
    if build is not None:
        return build()  # the same session: the build's first statement finds Spark up
    spark.stop()
    return 0


#: How often the loader restarts its query after hitting SPARK-55271 in one run.
MAX_BUG_RESTARTS = 3


def _is_replay_metrics_bug(exc: BaseException) -> bool:
    """Whether ``exc`` is Spark 4.1.1's NPE in ``KafkaMicroBatchStream.metrics`` (SPARK-55271).

    It strikes when a query starts by re-running a batch that a killed run had planned but not
    committed: the batch lands and is committed, then building its progress report fails
    because the source never fetched the latest offsets. Restarting the query (same session,
    same checkpoint) continues after that batch, so the loader does that instead of failing.
    """
    text = str(exc)
    return "IterableOps.map(scala.Function1)" in text and '"scala.Option.get()" is null' in text


def _quiet_logger(spark: SparkSession, name: str) -> None:
    """Silence one JVM logger (log4j 2), e.g. one whose errors the loader reports itself."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    try:
        level = jvm.org.apache.logging.log4j.Level.OFF
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception:  # noqa: BLE001 - logging is cosmetic; never fail the ingest for it
        pass


def _start_query(spark: SparkSession, args: argparse.Namespace, options: dict[str, str],
                 checkpoint: Path, totals: Totals) -> Any:  # fmt: skip
    """Start the streaming query: Kafka source -> foreachBatch(land) with the checkpoint."""
    # A topic with fewer partitions than there are cores is read (and landed) in as many tasks as
    # there are cores: Spark splits its offset ranges. More partitions are read one task each.
    options = {"minPartitions": str(spark.sparkContext.defaultParallelism), **options}
    stream = spark.readStream.format("kafka").options(**options).load()
    writer = (
        stream.writeStream.foreachBatch(make_sink(args.format, totals, checkpoint))
        .option("checkpointLocation", str(checkpoint))
        .queryName(f"lakehouse-{checkpoint.name}")
    )
    if args.follow:
        progress(f"following: landing new records every {args.trigger_interval}")
        writer = writer.trigger(processingTime=args.trigger_interval)
    else:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def _watch(query: Any, stop_signal: list[int], builds: Builds | None = None) -> None:
    """Print each finished batch's progress until the query ends or a stop is requested, and
    run the builds of ``--follow --build``, and the data tests of ``--test-every``, when they
    are due.

    Polls once a second rather than blocking in ``awaitTermination()``, so SIGTERM / Ctrl-C
    are handled here (stop the query cleanly) instead of interrupting a py4j call. A stop
    requested during a build is handled once the build is done.
    """
    seen: set[int] = set()
    while True:
        finished = query.awaitTermination(1)
        for report in query.recentProgress:
            p = json.loads(report.json)  # a property in pyspark 4
            batch = int(p.get("batchId", -1))
            if p.get("numInputRows", 0) and batch not in seen:
                seen.add(batch)
                progress(f"batch {batch}: {describe_progress(p)}")
        if finished:
            return
        if builds is not None and not stop_signal and builds.due():
            builds.run()
        if builds is not None and not stop_signal and builds.tests_due():
            builds.run_tests()
        if builds is not None and not stop_signal:
            status = query.status
            builds.idle(bool(status.get("isTriggerActive") or status.get("isDataAvailable")))
        if stop_signal:
            name = signal.Signals(stop_signal[0]).name
            progress(f"{name}: stopping; a batch under way runs again at the next start")
            query.stop()
            return


def _print_summary(totals: Totals, checkpoint: Path, started: float, failed: bool) -> None:
    seconds = time.monotonic() - started
    skipped = totals.read - totals.landed - totals.conflicting
    print(
        f"ingest kafka: read {totals.read}, landed {totals.landed}, skipped {skipped} as already "
        f"landed{bronze.conflicts_note(totals.conflicting)} "
        f"({totals.batches} batch{'es' if totals.batches != 1 else ''}"
        f"{', FAILED' if failed else ''}, checkpoint {checkpoint.name}, {seconds:.1f}s)",
        flush=True,
    )
