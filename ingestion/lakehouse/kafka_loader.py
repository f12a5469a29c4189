"""Land Kafka topics in bronze with Spark Structured Streaming, exactly once.

``lakehouse ingest --bootstrap-servers HOST:PORT --topics T1,T2`` (or ``--topic-pattern``) reads
with Spark's Kafka source and hands every micro-batch to :func:`lakehouse.bronze.land`.

Why exactly once holds even under SIGKILL at any moment:

* Spark writes the offset range of micro-batch N to ``<checkpoint>/offsets/N`` *before* running
  it and ``<checkpoint>/commits/N`` *after* the sink returned; both by atomic rename. A restart
  finds an uncommitted batch N and runs it again with the very same offset range (Kafka offsets
  are deterministic), then continues after it.
* The sink is a Delta MERGE on (topic, partition, offset) that only inserts missing keys, and a
  Delta commit is atomic. A batch whose MERGE had committed before the kill lands nothing the
  second time; one that had not lands everything. Nothing is written outside that commit. (A
  batch whose offsets bronze holds none of, the usual next batch of up to 32 topics, is
  appended instead, by a transaction that commits only if no other commit came after its look
  at bronze: a replay finds its rows there and MERGEs.)

So a record is in bronze at most once (the MERGE key) and at least once (the replay). The
checkpoint is per subscription, under ``$LAKEHOUSE_DIR/checkpoints/`` (:func:`checkpoint_name`).

Client options come from ``--kafka-config`` (a properties file) and ``--kafka-option k=v``; a
value ``env:NAME`` or ``file:PATH`` is read from the environment or a file so secrets stay out of
the command line and the repository. Values of secret-looking keys and every resolved secret are
masked in anything this module prints.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse import bronze
from lakehouse.paths import lakehouse_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame, SparkSession

#: Option keys whose values are never printed (case-insensitive substring match).
SECRET_KEY_WORDS = ("password", "secret", "jaas", "key", "token", "credential")
MASK = "****"

#: Client options Spark's Kafka source manages itself and rejects; the hint says what to use.
_SPARK_MANAGED = {
    "auto.offset.reset": "use --starting-offsets",
    "enable.auto.commit": "progress is kept in the checkpoint, not in Kafka",
    "key.deserializer": "keys are landed as bytes",
    "value.deserializer": "values are landed as bytes",
    "interceptor.classes": "not supported by Spark's Kafka source",
}

#: How long the connection check waits for the cluster to list its topics.
CONNECT_TIMEOUT_S = 30

#: Consumer settings the loader uses unless ``--kafka-option`` / ``--kafka-config`` say otherwise.
#: Spark's consumer reads one partition per task and waits for each fetch in turn, so Kafka's
#: 1 MB per partition and fetch makes a large landing mostly waiting: 4 MB here.
#: ``receive.buffer.bytes=-1``: the OS' (auto-tuned) socket buffer instead of 64 KB, which caps
#: every fetch on a link with any latency.
#: ``fetch.max.wait.ms=10``: a task reads a known offset range and its last fetch reaches the end
#: of the partition, where the broker holds the request for new data up to this long (500 ms by
#: default), a wait per topic partition and micro-batch that adds up with many partitions on
#: few cores; Spark's source never long-polls for new records, it plans them by offset.
CONSUMER_DEFAULTS = {
    "max.partition.fetch.bytes": str(4 * 1024 * 1024),
    "receive.buffer.bytes": "-1",
    "fetch.max.wait.ms": "10",
}


class LoaderError(Exception):
    """A usage or connection problem reported to the user without a traceback."""


# --------------------------------------------------------------------------- options and secrets


def is_secret_key(key: str) -> bool:
    """Whether the value of option ``key`` must never be printed."""
    lowered = key.lower()
    return any(word in lowered for word in SECRET_KEY_WORDS)


def parse_properties(text: str, origin: str) -> dict[str, str]:
    """Parse Java-style ``key=value`` / ``key: value`` lines (``#`` and ``!`` comment lines).

    The usual client config files (``client.properties``) have this shape, so a file written for
    ``kafka-console-consumer --consumer.config`` works as is. Line continuations are supported
    because JAAS configs are often wrapped with a trailing backslash.
    """
    options: dict[str, str] = {}
    logical: list[str] = []
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        start = number
        line = lines[number].strip()
        number += 1
        if not line or line[0] in "#!":
            continue
        logical = [line]
        while logical[-1].endswith("\\") and number < len(lines):
            logical[-1] = logical[-1][:-1]
            logical.append(lines[number].strip())
            number += 1
        joined = "".join(logical)
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", joined)
        if not match:
            raise LoaderError(f"{origin}:{start + 1}: expected key=value")
        options[match.group(1)] = match.group(2)
    return options


def resolve_value(key: str, value: str) -> tuple[str, bool]:
    """``env:NAME`` / ``file:PATH`` -> the secret; returns (value, came from env or file).

    Errors name the option and the variable or file, never the value.
    """
    if value.startswith("env:"):
        name = value[4:]
        if name not in os.environ:
            raise LoaderError(f"Kafka option {key}: environment variable {name} is not set")
        return os.environ[name], True
    if value.startswith("file:"):
        path = Path(value[5:]).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise LoaderError(f"Kafka option {key}: cannot read {path}: {exc.strerror}") from exc
        return text.rstrip("\r\n"), True
    return value, False


@dataclass
class ClientOptions:
    """Resolved Kafka client options (without Spark's ``kafka.`` prefix) and what to mask."""

    options: dict[str, str]
    secrets: set[str] = field(default_factory=set)

    def masked(self) -> dict[str, str]:
        """The options as they may be printed."""
        return {k: self.mask_value(k, v) for k, v in self.options.items()}

    def mask_value(self, key: str, value: str) -> str:
        """``value`` itself, or :data:`MASK` when the key or the value is secret."""
        return MASK if is_secret_key(key) or value in self.secrets else value

    def scrub(self, text: str) -> str:
        """``text`` with every secret value replaced by :data:`MASK` (for error messages)."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret:
                text = text.replace(secret, MASK)
        return text


def client_options(args: argparse.Namespace) -> ClientOptions:
    """Kafka client options from ``--kafka-config`` then ``--kafka-option`` (later wins).

    ``--bootstrap-servers`` always wins over a ``bootstrap.servers`` in a file or option.
    """
    raw: dict[str, str] = {}
    if args.kafka_config:
        path = Path(args.kafka_config).expanduser()
        try:
            raw.update(parse_properties(path.read_text(), str(path)))
        except OSError as exc:
            raise LoaderError(f"--kafka-config: cannot read {path}: {exc.strerror}") from exc
    for item in args.kafka_option or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise LoaderError(f"--kafka-option expects KEY=VALUE, got {item.split('=')[0]!r}")
        raw[key] = value
    resolved = ClientOptions({})
    for key, value in raw.items():
        bare = key[len("kafka.") :] if key.startswith("kafka.") else key
        if bare in _SPARK_MANAGED:
            raise LoaderError(f"Kafka option {bare} cannot be set: {_SPARK_MANAGED[bare]}")
        plain, from_secret_store = resolve_value(bare, value)
        resolved.options[bare] = plain
        if from_secret_store or is_secret_key(bare):
            resolved.secrets.add(plain)
            # A JAAS config also leaks if only its password shows up in some message.
            resolved.secrets.update(re.findall(r'password\s*=\s*"([^"]+)"', plain))
    resolved.options["bootstrap.servers"] = args.bootstrap_servers
    return resolved


def parse_topics(raw: str | None) -> list[str]:
    """``"a, b,,a"`` -> ``["a", "b"]``: order kept, blanks and repeats dropped."""
    topics: list[str] = []
    for name in (raw or "").split(","):
        name = name.strip()
        if name and name not in topics:
            topics.append(name)
    return topics


def checkpoint_name(topics: list[str] | None, pattern: str | None) -> str:
    """A stable directory name for one subscription: readable part plus a hash of the exact one.

    The same topics in any order give the same name, so a restart finds its checkpoint. A
    different subscription gets a fresh checkpoint: Spark's Kafka source cannot drop a topic from
    a checkpoint (it reports the missing partitions as data loss), so reusing one is unsafe.
    """
    if topics:
        unique = sorted(set(topics))
        spec, kind, readable = "topics:" + ",".join(unique), "topics", "+".join(unique)
    elif pattern:
        spec, kind, readable = "pattern:" + pattern, "pattern", pattern
    else:
        raise LoaderError("give --topics T1,T2 or --topic-pattern REGEX")
    digest = hashlib.sha256(spec.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._+-]+", "_", readable).strip("._")[:80] or "x"
    return f"kafka-{kind}-{readable}-{digest}"


def source_options(
    args: argparse.Namespace, client: ClientOptions, topics: list[str]
) -> dict[str, str]:
    """Options of Spark's Kafka source: subscription, safety knobs, ``kafka.``-prefixed client."""
    if args.max_offsets_per_trigger is not None and args.max_offsets_per_trigger < 1:
        raise LoaderError("--max-offsets-per-trigger must be at least 1")
    options = {
        "startingOffsets": args.starting_offsets,
        "failOnDataLoss": args.fail_on_data_loss,
        "includeHeaders": "true",
    }
    if args.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(args.max_offsets_per_trigger)
    if topics:
        options["subscribe"] = ",".join(topics)
    else:
        options["subscribePattern"] = args.topic_pattern
    for key, value in {**CONSUMER_DEFAULTS, **client.options}.items():
        options[f"kafka.{key}"] = value
    return options


# --------------------------------------------------------------------------- progress reporting


def _progress(message: str) -> None:
    print(f"[lakehouse] {message}", file=sys.stderr, flush=True)


def _flatten_offsets(raw: Any) -> dict[tuple[str, int], int]:
    """Spark's ``{"topic": {"0": 12}}`` offset JSON (dict or string) -> {(topic, 0): 12}."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    flat: dict[tuple[str, int], int] = {}
    for topic, partitions in (raw or {}).items():
        if isinstance(partitions, dict):
            for partition, offset in partitions.items():
                flat[(topic, int(partition))] = int(offset)
    return flat


def _tp(key: tuple[str, int]) -> str:
    return f"{key[0]}[{key[1]}]"


def describe_progress(progress: dict[str, Any], limit: int = 6) -> str:
    """One progress line: rate, offset ranges and lag per partition (largest lags first)."""
    seconds = (progress.get("durationMs") or {}).get("triggerExecution", 0) / 1000
    parts = [
        f"{progress.get('numInputRows', 0)} records in {seconds:.1f}s "
        f"({float(progress.get('processedRowsPerSecond') or 0):.0f} rec/s)"
    ]
    for source in progress.get("sources", []):
        start = _flatten_offsets(source.get("startOffset"))
        end = _flatten_offsets(source.get("endOffset"))
        latest = _flatten_offsets(source.get("latestOffset"))
        moved = [k for k in sorted(end) if end[k] != start.get(k, 0)]
        ranges = [f"{_tp(k)} {start.get(k, 'start')}->{end[k]}" for k in moved[:limit]]
        if len(moved) > limit:
            ranges.append(f"+{len(moved) - limit} more")
        if ranges:
            parts.append("offsets " + ", ".join(ranges))
        if latest:
            lag = {k: max(0, latest[k] - end.get(k, 0)) for k in latest}
            worst = sorted(lag, key=lambda k: (-lag[k], k))[:limit]
            detail = ", ".join(f"{_tp(k)} {lag[k]}" for k in worst if lag[k])
            parts.append(f"lag {sum(lag.values())}" + (f" ({detail})" if detail else ""))
    return "; ".join(parts)


def _committed_batches(checkpoint: Path) -> tuple[int | None, int | None]:
    """(last planned batch, last committed batch) of a checkpoint, None when there is none."""

    def last(sub: str) -> int | None:
        names = [p.name for p in (checkpoint / sub).glob("*") if p.name.isdigit()]
        return max(map(int, names)) if names else None

    return last("offsets"), last("commits")


# --------------------------------------------------------------------------- the loader


@dataclass
class _Totals:
    """What the micro-batches of this run landed (filled by the foreachBatch callback)."""

    read: int = 0
    landed: int = 0
    #: Records offered at a landed coordinate with other bytes (bronze.kafka_conflicts).
    conflicting: int = 0
    batches: int = 0
    #: The batch a killed run left uncommitted; it runs first and is reported when it lands.
    replay: int | None = None
    by_batch: dict[int, bronze.LandResult] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, epoch: int, result: bronze.LandResult) -> None:
        with self.lock:
            self.read += result.read
            self.landed += result.landed
            self.conflicting += result.conflicting
            self.batches += 1
            self.by_batch[epoch] = result


def _offset_ranges(df: DataFrame) -> str:
    """``orders[0] 100..199, orders[1] 7..42``: what a failed batch held, for the error."""
    from pyspark.sql import functions as F

    rows = (
        df.groupBy("topic", "partition")
        .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"))
        .orderBy("topic", "partition")
        .collect()
    )
    return ", ".join(f"{r.topic}[{r.partition}] offsets {r.lo}..{r.hi}" for r in rows)


def planned_ranges(checkpoint: Path, epoch: int) -> list[bronze.OffsetRange] | None:
    """The offsets micro-batch ``epoch`` was planned to read, from its checkpoint; None if unknown.

    Spark writes ``offsets/<epoch>`` (where the batch ends, exclusive) before it runs the batch;
    the batch starts where ``offsets/<epoch - 1>`` ended. A partition without a previous end
    (the first batch, a topic new to a pattern) starts at 0: a range only has to cover the
    batch, not to be tight. Record counts are the offset spans, upper bounds.
    """

    def ends(number: int) -> dict[tuple[str, int], int] | None:
        try:
            lines = (checkpoint / "offsets" / str(number)).read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        if len(lines) < 3 or not lines[0].startswith("v"):
            return None
        flat: dict[tuple[str, int], int] = {}
        for line in lines[2:]:
            if line.strip() and line.strip() != "-":
                flat.update(_flatten_offsets(line))
        return flat

    end = ends(epoch)
    if not end:
        return None
    start = (ends(epoch - 1) if epoch > 0 else None) or {}
    ranges = []
    for (topic, partition), last in sorted(end.items()):
        first = start.get((topic, partition), 0)
        if last > first:
            ranges.append(bronze.OffsetRange(topic, partition, first, last - 1, last - first))
    return ranges


def _make_sink(fmt: str | None, totals: _Totals, checkpoint: Path):  # type: ignore[no-untyped-def]
    """The foreachBatch function: land one micro-batch, remember its counts."""

    def land_batch(df: DataFrame, epoch: int) -> None:
        from pyspark import StorageLevel

        ranges = planned_ranges(checkpoint, epoch)
        if ranges is not None:
            # Kafka is read once, by the MERGE (or the append): the ranges come from the checkpoint.
            records, persisted = df.select(*bronze.RECORD_COLUMNS), False
        else:
            # Read Kafka once per batch: land() takes the offset ranges, then MERGEs the same
            # rows. On local disk, not in memory: the driver's memory stays flat.
            records, persisted = df.select(*bronze.RECORD_COLUMNS).persist(StorageLevel.DISK_ONLY), True
        try:
            # df.sparkSession, not the outer session: the batch's temp views live in the
            # streaming query's own (cloned) session. A micro-batch reads every offset once.
            result = bronze.land(records.sparkSession, records, fmt=fmt, source="kafka",
                                 unique_offsets=True, ranges=ranges, planned=ranges is not None)  # fmt: skip
        except Exception as exc:
            try:
                where = _offset_ranges(records)
            except Exception:  # noqa: BLE001 - the batch may be unreadable; report what we have
                where = "offsets unknown"
            raise RuntimeError(
                f"landing micro-batch {epoch} ({where}) into {bronze.TABLE} failed: {exc}"
            ) from exc
        finally:
            if persisted:
                records.unpersist()
        totals.add(epoch, result)
        if result.conflicting:
            _progress(
                f"batch {epoch}: {result.conflicting} record(s) conflict with what bronze holds at their "
                f"(topic, partition, offset); kept in {bronze.CONFLICTS_TABLE} (batch {result.batch_id})"
            )
        if epoch == totals.replay:
            # Spark reports no progress for this batch (SPARK-55271), so say what it did here.
            _progress(
                f"batch {epoch} (re-run of the interrupted batch): read {result.read}, landed "
                f"{result.landed}, skipped {result.skipped} as already landed"
            )

    return land_batch


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
        _progress(f"topics matching {pattern!r} now: {', '.join(matching) or 'none'}")


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
    (:class:`_Builds`). The exit code is then the last build's when the landing succeeded.
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
        _progress(f"ingest kafka: {client.scrub(str(exc))}")
        return 2
    checkpoint = lakehouse_dir() / "checkpoints" / name
    subscription = ",".join(topics) if topics else f"pattern {args.topic_pattern!r}"
    shown = " ".join(f"{k}={v}" for k, v in sorted(client.masked().items()))
    _progress(f"ingest kafka: {subscription} ({shown})")
    planned, committed = _committed_batches(checkpoint)
    if planned is None:
        _progress(f"new checkpoint {checkpoint} (starting offsets: {args.starting_offsets})")
    else:
        done = f"last committed batch {committed}" if committed is not None else "none committed"
        _progress(f"resuming from checkpoint {checkpoint} ({done})")
        if committed is None or planned > committed:
            _progress(
                f"batch {planned} was interrupted before its commit: it runs again and "
                "records it had already landed are skipped"
            )
    return _run(args, client, options, topics, checkpoint, started, build, tests)


class _Builds:
    """The builds of ``lakehouse ingest --follow --build``: in the loader's own process and Spark
    session, between its progress reports, while the stream lands in the background.

    Why in this process: a trickle built by a `lakehouse build` of its own pays a JVM, Spark
    and dbt start and a cold JIT every time, and with Derby, the embedded metastore, it cannot
    even start while the loader holds the metastore. The first
    build runs one interval after the start, whatever landed (records landed before the start
    may be waiting); later ones only when records landed since the last build.

    With ``tests`` (``--test-every``) the builds leave the data tests out and ``tests`` runs
    them after a build that passed, at most every ``test_every`` seconds: the data tests check
    whole tables and cost several times an increment's build, so a loader that ran them in
    every build of a trickle would spend its minutes re-checking what no build changed. The
    first tests run right after the first build that passes; later ones once a build has passed
    since, even when no record has landed for a while.
    """

    def __init__(self, build: Callable[[], int], every: float, totals: _Totals,
                 tests: Callable[[], int] | None = None, test_every: float | None = None,
                 read_ahead: Callable[[], None] | None = None) -> None:  # fmt: skip
        self.build, self.every, self.totals = build, every, totals
        self.tests, self.test_every = tests, test_every
        self.read_ahead = read_ahead
        #: Records landed when bronze's snapshot was last read, by a build or ahead of one.
        self.read_up_to = 0
        #: Records landed when bronze's snapshot was last read ahead of a build.
        self.read_ahead_at: int | None = None
        self.last = time.monotonic()
        self.landed_at_last: int | None = None
        self.count = self.failed = 0
        self.last_status = 0
        self.tests_started: float | None = None
        self.test_count = self.tests_failed = 0
        self.last_test_status = 0
        self.built_since_tests = False

    def due(self) -> bool:
        """Whether a build should run now."""
        if time.monotonic() - self.last < self.every:
            return False
        return self.landed_at_last is None or self.totals.landed > self.landed_at_last

    def tests_due(self) -> bool:
        """Whether the data tests should run now: a build passed since they last ran, and
        ``test_every`` seconds have gone by since they last started (or they never ran)."""
        if self.tests is None or not self.built_since_tests:
            return False
        return self.tests_started is None or time.monotonic() - self.tests_started >= (self.test_every or 0)

    def run(self) -> None:
        """Build once; a failed build is reported and the loader goes on (the next may pass)."""
        landed = self.totals.landed
        ahead = ", bronze's snapshot read ahead" if landed and self.read_ahead_at == landed else ""
        _progress(f"build {self.count + 1}: {landed} records landed by this loader so far{ahead}")
        started = time.monotonic()
        self.read_up_to = landed
        self.last_status = self._call(self.build, f"build {self.count + 1}")
        self.count += 1
        self.last, self.landed_at_last = time.monotonic(), landed
        if self.last_status != 0:
            self.failed += 1
            _progress(f"build {self.count} failed (dbt exit {self.last_status}, see logs/dbt.log); "
                      f"the loader goes on, next build in {self.every:g} s")  # fmt: skip
            return
        _progress(f"build {self.count}: done in {self.last - started:.1f}s")
        self.built_since_tests = True

    def idle(self, stream_busy: bool) -> None:
        """Read bronze's newest snapshot ahead of the next build (``read_ahead``) when records
        landed since it was last read, so that build need not (:func:`bronze.read_ahead`).

        Only while the stream is idle (``stream_busy``: a batch runs, or Kafka holds records it
        has not read): a loader catching up lands batch after batch, and reading each one's
        snapshot would only slow it down. A failure costs nothing but the head start."""
        landed = self.totals.landed
        if self.read_ahead is None or stream_busy or landed <= self.read_up_to:
            return
        self.read_up_to = landed
        try:
            self.read_ahead()
            self.read_ahead_at = landed
        except Exception as exc:  # noqa: BLE001 - the next build reads bronze all the same
            _progress(f"reading bronze ahead of the next build failed, the build will: "
                      f"{type(exc).__name__}: {_first_lines(str(exc), 2)}")  # fmt: skip

    def run_tests(self) -> None:
        """Run the data tests once; failed tests are reported and the loader goes on."""
        assert self.tests is not None
        number = self.test_count + 1
        _progress(f"tests {number}: the data tests, after build {self.count}")
        self.tests_started = time.monotonic()
        self.built_since_tests = False
        self.last_test_status = self._call(self.tests, f"tests {number}")
        self.test_count = number
        if self.last_test_status != 0:
            self.tests_failed += 1
            _progress(f"tests {number} failed (dbt exit {self.last_test_status}, see logs/dbt.log); "
                      f"the loader goes on, next tests in {self.test_every:g} s at the earliest")  # fmt: skip
        else:
            _progress(f"tests {number}: passed in {time.monotonic() - self.tests_started:.1f}s")

    @staticmethod
    def _call(step: Callable[[], int], name: str) -> int:
        """``step()``'s exit status; one that raises is reported and counts as 2."""
        try:
            return step()
        except Exception as exc:  # noqa: BLE001 - the stream must outlive one bad build
            # dbt's runner returns its own errors as a status; this is anything around it
            _progress(f"{name} raised {type(exc).__name__}: {_first_lines(str(exc), 3)}")
            return 2

    @property
    def status(self) -> int:
        """The loader's exit status: the last build's, else the last data tests' when they failed."""
        return self.last_status or self.last_test_status

    def summary(self) -> str:
        text = f"builds: {self.count}" + (f", {self.failed} failed" if self.failed else "")
        if self.tests is not None:
            text += f"; tests: {self.test_count}" + (f", {self.tests_failed} failed" if self.tests_failed else "")
        return text


def _run(args: argparse.Namespace, client: ClientOptions, options: dict[str, str],
         topics: list[str], checkpoint: Path, started: float,
         build: Callable[[], int] | None = None, tests: Callable[[], int] | None = None) -> int:  # fmt: skip
    from lakehouse.session import get_spark

    _progress(f"starting Spark (LAKEHOUSE_DIR={lakehouse_dir()})")
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
    planned, committed = _committed_batches(checkpoint)
    pending = planned is not None and (committed is None or planned > committed)
    totals = _Totals(replay=planned if pending else None)
    builds = (_Builds(build, args.build_every, totals, tests, getattr(args, "test_every", None),
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
                _progress(
                    "Spark's Kafka source failed to report progress after re-running the "
                    "interrupted batch (SPARK-55271 in Spark 4.1.1); that batch is landed and "
                    "committed, continuing"
                )
    except LoaderError as exc:
        _progress(f"ingest kafka: {client.scrub(str(exc))}")
        return 1
    except Exception as exc:  # noqa: BLE001 - StreamingQueryException, Py4JJavaError, ...
        _progress(f"ingest kafka failed: {_first_lines(client.scrub(str(exc)))}")
        _print_summary(totals, checkpoint, started, failed=True)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _print_summary(totals, checkpoint, started, failed=False)
    from lakehouse.cli import conflicts_status

    if conflicts_status(totals.conflicting, getattr(args, "accept_conflicts", False), "kafka"):
        # no build on a lakehouse fed from two histories until someone has looked
        if builds is not None:
            _progress(builds.summary())
        return 1
    if builds is not None:
        _progress(builds.summary())
        return builds.status
    if stop_signal and not args.follow:
        _progress("stopped before catching up: run the same command again to continue")
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
                 checkpoint: Path, totals: _Totals) -> Any:  # fmt: skip
    """Start the streaming query: Kafka source -> foreachBatch(land) with the checkpoint."""
    # A topic with fewer partitions than there are cores is read (and landed) in as many tasks as
    # there are cores: Spark splits its offset ranges. More partitions are read one task each.
    options = {"minPartitions": str(spark.sparkContext.defaultParallelism), **options}
    stream = spark.readStream.format("kafka").options(**options).load()
    writer = (
        stream.writeStream.foreachBatch(_make_sink(args.format, totals, checkpoint))
        .option("checkpointLocation", str(checkpoint))
        .queryName(f"lakehouse-{checkpoint.name}")
    )
    if args.follow:
        _progress(f"following: landing new records every {args.trigger_interval}")
        writer = writer.trigger(processingTime=args.trigger_interval)
    else:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def _watch(query: Any, stop_signal: list[int], builds: _Builds | None = None) -> None:
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
        for progress in query.recentProgress:
            p = json.loads(progress.json)  # a property in pyspark 4
            batch = int(p.get("batchId", -1))
            if p.get("numInputRows", 0) and batch not in seen:
                seen.add(batch)
                _progress(f"batch {batch}: {describe_progress(p)}")
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
            _progress(f"{name}: stopping; a batch under way runs again at the next start")
            query.stop()
            return


def _first_lines(text: str, count: int = 12) -> str:
    """The useful head of a JVM error (the message, not the stack trace or the query plan)."""
    text = text.split("=== Streaming Query ===")[0]
    lines = [line for line in text.splitlines() if line.strip()]
    head = [line for line in lines if not line.lstrip().startswith("at ")][:count]
    return "\n".join(head)


def _print_summary(totals: _Totals, checkpoint: Path, started: float, failed: bool) -> None:
    seconds = time.monotonic() - started
    from lakehouse.cli import conflicts_note

    skipped = totals.read - totals.landed - totals.conflicting
    print(
        f"ingest kafka: read {totals.read}, landed {totals.landed}, skipped {skipped} as already "
        f"landed{conflicts_note(totals.conflicting)} ({totals.batches} batch{'es' if totals.batches != 1 else ''}"
        f"{', FAILED' if failed else ''}, checkpoint {checkpoint.name}, {seconds:.1f}s)",
        flush=True,
    )
