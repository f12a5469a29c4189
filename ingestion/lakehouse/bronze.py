"""The bronze table: every Kafka record exactly as it arrived, landed exactly once.

Both loaders (file dumps and the Kafka source) hand a DataFrame of raw records to
:func:`land`, which stamps it with the batch id and ingestion time and MERGEs it into
``bronze.kafka_records`` on (topic, partition, offset), inserting only what is not there yet.
Re-landing a record therefore adds nothing, whichever loader lands it and however often. A
record offered at a landed (topic, partition, offset) with other bytes (a recreated topic, a dump
of another cluster, a file holding one offset twice) is a conflict: bronze keeps what it holds,
and both versions go to ``bronze.kafka_conflicts`` (:func:`_keep_conflicts`) for an operator to
review. A batch of offsets bronze does not hold yet (the first batch of a new lakehouse, and the next
batch of a feed of up to 32 topics) is appended instead, in a Delta transaction that a
concurrent writer's commit makes fail (then it is MERGEd). Each commit names its batch (id,
format, topics, ingestion time) in its user metadata, from which a build routes the records
landed since its last run without reading them.
"""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

TABLE = "bronze.kafka_records"

#: Columns a loader must supply; ``land`` adds ``format``, ``ingested_at`` and ``batch_id``.
RECORD_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")

DDL = f"""
create table if not exists {TABLE} (
    topic string not null comment 'Kafka topic the record was read from',
    partition int not null comment 'Kafka partition',
    offset bigint not null comment 'Kafka offset inside the partition',
    timestamp timestamp comment 'Kafka record timestamp',
    key binary comment 'Kafka record key, byte-exact (null when the record has none)',
    value binary comment 'Kafka record value, byte-exact (null for a tombstone)',
    headers array<struct<key: string, value: binary>> comment 'Kafka record headers',
    format string comment 'format id given at ingest (--format); null: seed or detection decides',
    source string comment 'where the loader read it: kafka or file:<path>',
    ingested_at timestamp not null comment 'when this ingest batch was committed',
    batch_id string not null comment 'id of the ingest batch that landed the record'
)
using delta
comment 'Raw Kafka records, append-only, one row per (topic, partition, offset)'
tblproperties (
    'delta.appendOnly' = 'true',
    'delta.autoOptimize.optimizeWrite' = 'true'
)
"""


#: Records offered at a landed (topic, partition, offset) with other bytes, beside what bronze holds.
CONFLICTS_TABLE = "bronze.kafka_conflicts"

CONFLICTS_DDL = f"""
create table if not exists {CONFLICTS_TABLE} (
    topic string not null comment 'Kafka topic of the coordinate both versions claim',
    partition int not null comment 'Kafka partition',
    offset bigint not null comment 'Kafka offset inside the partition',
    landed_key binary comment 'key bronze holds at the coordinate (byte-exact)',
    landed_value binary comment 'value bronze holds at the coordinate (byte-exact)',
    landed_headers array<struct<key: string, value: binary>> comment 'headers bronze holds',
    landed_timestamp timestamp comment 'Kafka timestamp bronze holds',
    landed_source string comment 'where the held record was read (kafka or file:<path>)',
    landed_batch_id string comment 'ingest batch that landed the held record',
    offered_key binary comment 'key of the record offered again (byte-exact)',
    offered_value binary comment 'value of the record offered again (byte-exact)',
    offered_headers array<struct<key: string, value: binary>> comment 'headers of the offered record',
    offered_timestamp timestamp comment 'Kafka timestamp of the offered record',
    offered_source string comment 'where the offered record was read (kafka or file:<path>)',
    batch_id string not null comment 'ingest batch that offered it (and landed nothing at this coordinate)',
    detected_at timestamp not null comment 'when that ingest batch found the conflict'
)
using delta
comment 'Records offered at a landed coordinate with another key or value; bronze keeps its own version'
tblproperties ('delta.appendOnly' = 'true')
"""


@dataclass(frozen=True)
class LandResult:
    """What one call of :func:`land` did."""

    batch_id: str
    read: int
    landed: int
    #: Records offered at a landed coordinate with another key or value (kept in CONFLICTS_TABLE).
    conflicting: int = 0

    @property
    def skipped(self) -> int:
        """Records of the batch already in bronze with the same bytes (or repeated alike in the batch)."""
        return self.read - self.landed - self.conflicting


def ensure_bronze(spark: SparkSession) -> None:
    """Create the bronze schema and table if this lakehouse does not have them yet."""
    if spark.catalog.tableExists(TABLE):
        return
    spark.sql("create database if not exists bronze")
    _clear_aborted_create(spark)
    spark.sql(DDL)


def _clear_aborted_create(spark: SparkSession) -> None:
    """Remove what a ``create table`` killed half-way left at the table's managed location.

    Delta writes the table's first commit before it registers the table in the metastore. A
    loader killed in between (SIGKILL during the first ingest of a new lakehouse) leaves a
    location that every later ``create table`` refuses (DELTA_CREATE_TABLE_WITH_NON_EMPTY_
    LOCATION). Such a location holds only the empty table's commit 0, so it is removed; one
    holding data is reported instead, never deleted.
    """
    rows = spark.sql("describe database bronze").collect()
    info = {str(r[0]).lower(): str(r[1]) for r in rows}
    base = info.get("location", "")
    if not base.startswith("file:"):
        return  # not the embedded local default: leave other storage alone
    location = Path(base.removeprefix("file:")) / TABLE.split(".")[1]
    if not location.exists():
        return
    log = location / "_delta_log"
    later_commits = [p for p in log.glob("*.json") if p.stem.isdigit() and int(p.stem) > 0]
    data_files = [p for p in location.rglob("*.parquet") if "_delta_log" not in p.parts]
    if later_commits or data_files:
        raise RuntimeError(
            f"{TABLE} is not registered in this lakehouse's metastore, but {location} holds "
            "data: restore the metastore or move that directory away"
        )
    shutil.rmtree(location)


def land(
    spark: SparkSession,
    records: DataFrame,
    *,
    fmt: str | None,
    source: str,
    batch_id: str | None = None,
    ranges: list[OffsetRange] | None = None,
    unique_offsets: bool = False,
    planned: bool = False,
) -> LandResult:
    """MERGE ``records`` (columns :data:`RECORD_COLUMNS`) into bronze, inserting only new offsets.

    Offsets repeated inside the batch are landed once. ``fmt`` is the format id given at ingest
    (or ``None``); ``source`` says where the batch came from. Returns counts for the summary.

    The MERGE reads only the bronze files whose statistics overlap the batch's offset ranges, so
    its cost follows the batch, not the size of bronze. The ranges come from one aggregation
    over ``records`` (so ``records`` is read twice: persist it when computing it twice would
    cost), or from the caller (``ranges``, e.g. from a pass it makes anyway), who guarantees
    that they cover every record: the MERGE cannot see whether bronze holds a record outside
    them. ``unique_offsets=True`` tells that no offset repeats (a Kafka micro-batch reads every
    offset once), which skips that check.

    ``planned=True``: ``ranges`` are the offsets the batch was planned to read (a Kafka
    micro-batch's, from its checkpoint), so ``records`` is read once, by the MERGE itself. Their
    record counts are then only upper bounds (compacted topics and transaction markers leave
    gaps): the count read is the MERGE's own count of its source rows (or, when it inserted
    nothing and so committed nothing, a count of ``records``).

    A batch none of whose offset ranges bronze holds a record in is appended, not MERGEd
    (:func:`_append_new`).
    """
    ensure_bronze(spark)
    batch_id = batch_id or uuid.uuid4().hex
    if ranges is None:
        ranges = offset_ranges(records, check_repeats=not unique_offsets)
    ranges = [r for r in ranges if r.records]
    read = sum(r.records for r in ranges)
    if read == 0:
        return LandResult(batch_id, 0, 0)
    batch = records.select(*RECORD_COLUMNS)
    if any(r.repeated for r in ranges):
        batch = batch.dropDuplicates(["topic", "partition", "offset"])
    else:
        batch = _coalesced(batch, read)
    stamp = _stamp()
    stamped = _stamped(batch, fmt, source, batch_id, stamp)
    metadata = commit_metadata(batch_id, fmt, sorted({r.topic for r in ranges}), stamp)
    appended = _append_new(spark, stamped, ranges, batch_id, metadata)
    if appended is not None:
        read = appended if planned else read
        landed = appended
    else:
        landed = _merge(spark, stamped, ranges, batch_id, metadata)
        if planned:
            # Delta commits nothing when a MERGE inserts nothing (a replayed batch): count apart
            source_rows = _source_rows(spark, batch_id)
            read = source_rows if source_rows is not None else batch.count()
    # Every record landed: none can differ from what bronze holds, and nothing is compared.
    conflicting = 0 if landed >= read else _keep_conflicts(spark, records, ranges, source, batch_id, stamp)
    return LandResult(batch_id, read, landed, conflicting)


@dataclass(frozen=True)
class OffsetRange:
    """The offsets one batch holds of one topic partition."""

    topic: str
    partition: int
    first: int
    last: int
    records: int
    #: Whether some offset occurs more than once in the batch.
    repeated: bool = False


def read_ahead(spark: SparkSession) -> None:
    """Read bronze's newest snapshot now (its files and their statistics), while nothing waits.

    Why: the first query over a Delta table after a commit rebuilds the snapshot's state before
    it can skip a file, in Spark jobs of their own, which the parse's insert would otherwise
    wait for at every build. A following loader between a batch and its next build has the time
    to pay it (:meth:`lakehouse.kafka_loader.builds.Builds.idle`). The filter keeps no file
    (every record was stamped before now), so the query reads no record.
    """
    spark.sql(f"select 1 from {TABLE} where ingested_at > current_timestamp() limit 1").collect()


def offset_ranges(records: DataFrame, *, check_repeats: bool = True) -> list[OffsetRange]:
    """Per (topic, partition) of ``records``: first and last offset, record count, repeats."""
    return ranges_of(aggregate_offsets(records, check_repeats=check_repeats))


def aggregate_offsets(records: DataFrame, *extra: Column, check_repeats: bool = True) -> list[Row]:
    """The aggregation behind :func:`offset_ranges` (plus ``extra`` aggregates), collected.

    One small aggregation. Repeats are found exactly and cheaply with Spark's offset bitmaps:
    each task ORs the offsets it reads into one bitmap per block of 32768 offsets, so only those
    bitmaps are shuffled, not every key. Rows whose topic is null come back with topic None.
    """
    from pyspark.sql import functions as F

    keys = ["topic", "partition"]
    aggregates = [
        F.min("offset").alias("first"),
        F.max("offset").alias("last"),
        F.count(F.lit(1)).alias("records"),
        *extra,
    ]
    if check_repeats:
        keys.append(F.bitmap_bucket_number("offset").alias("bucket"))
        aggregates.append(F.bitmap_count(F.bitmap_construct_agg(F.bitmap_bit_position("offset"))).alias("distinct"))
    return records.groupBy(*keys).agg(*aggregates).collect()


def ranges_of(rows: list[Row]) -> list[OffsetRange]:
    """:class:`OffsetRange` per topic partition from the rows of :func:`aggregate_offsets`."""
    merged: dict[tuple[str | None, int | None], list[Row]] = {}
    for row in rows:
        merged.setdefault((row["topic"], row["partition"]), []).append(row)
    return [_merge_buckets(topic, partition, rows) for (topic, partition), rows in sorted(
        merged.items(), key=lambda item: (item[0][0] or "", item[0][1] or 0))]  # fmt: skip


def _merge_buckets(topic: str | None, partition: int | None, rows: list[Row]) -> OffsetRange:
    """One :class:`OffsetRange` from the per-bucket rows of one topic partition."""
    firsts = [r["first"] for r in rows if r["first"] is not None]
    lasts = [r["last"] for r in rows if r["last"] is not None]
    records = sum(int(r["records"]) for r in rows)
    # Buckets hold disjoint offsets, so the distinct offsets of the partition add up.
    repeated = "distinct" in rows[0].__fields__ and sum(int(r["distinct"] or 0) for r in rows) != records
    return OffsetRange(
        topic, int(partition or 0), min(firsts, default=0), max(lasts, default=0), records, repeated  # type: ignore[arg-type]
    )


#: Records per bronze file the loaders aim at (about 25 MB of Parquet for CDC-sized messages).
RECORDS_PER_FILE = 250_000


def _coalesced(batch: DataFrame, records: int) -> DataFrame:
    """``batch`` in fewer, bigger tasks when it comes in many small ones.

    A Kafka micro-batch has one Spark partition per topic partition: fifty topics would make
    fifty small files per batch. Coalescing (no shuffle) keeps the cores busy and writes about
    one file per :data:`RECORDS_PER_FILE` records.
    """
    cores = batch.sparkSession.sparkContext.defaultParallelism
    wanted = max(-(-records // RECORDS_PER_FILE), min(cores, -(-records // 50_000)), 1)
    if batch.rdd.getNumPartitions() > 2 * wanted:
        return batch.coalesce(wanted)
    return batch


def _stamp() -> datetime:
    """The batch's ``ingested_at``: now (UTC), on a grid of even milliseconds.

    Delta's file statistics keep milliseconds and read a file's newest stamp as up to one
    millisecond later, so a build that has consumed up to a stamp reads on from two milliseconds
    after it (macro ``cdc_newer_than``), and Delta skips every file of the batches before by
    their statistics alone.
    """
    now = datetime.now(timezone.utc)
    return now.replace(microsecond=now.microsecond // 2000 * 2000)


def _stamped(batch: DataFrame, fmt: str | None, source: str, batch_id: str, stamp: datetime) -> DataFrame:
    """The batch as bronze rows: record columns and the batch's stamps.

    ``ingested_at`` is one literal for the whole batch (``stamp``), so every record of the
    batch carries the same value whatever plan Delta picks for the MERGE.
    """
    from pyspark.sql import functions as F

    return batch.select(
        *RECORD_COLUMNS,
        F.lit(fmt).cast("string").alias("format"),
        F.lit(source).alias("source"),
        F.lit(stamp).cast("timestamp").alias("ingested_at"),
        F.lit(batch_id).alias("batch_id"),
    )


#: The commit metadata lists a batch's topics up to this many; a batch of more lists none
#: (a build then routes it with a query over its records, as for a commit without the metadata).
MAX_LISTED_TOPICS = 1000


def commit_metadata(batch_id: str, fmt: str | None, topics: list[str], stamp: datetime) -> str:
    """The user metadata of the commit that lands a batch: what the batch is, for ``describe history``.

    ``{"cdc_lakehouse_batch": {"id", "format", "topics", "ingested_at"}}``: the batch id, the
    format given at ingest (null: the seed or detection decides), the topics it read (null
    above :data:`MAX_LISTED_TOPICS`) and its ``ingested_at`` (:func:`spark_text`). The
    build's parse (macro ``cdc_landed_batches``) routes the batches landed since its last run
    from these, out of bronze's log: it knows which parsers it needs and up to which stamp to
    read without a query over the records.
    """
    batch = {
        "id": batch_id,
        "format": fmt,
        "topics": topics if len(topics) <= MAX_LISTED_TOPICS else None,
        "ingested_at": spark_text(stamp),
    }
    return json.dumps({"cdc_lakehouse_batch": batch}, ensure_ascii=False, separators=(",", ":"))


def spark_text(stamp: datetime) -> str:
    """``stamp`` in UTC as a UTC session's Spark prints a timestamp: ``cast(ingested_at as string)``.

    To the millisecond, trailing zeros and a bare point trimmed (``...:24.68``, ``...:24``), so
    the watermark a build records reads the same whether it routed the records from bronze's log
    or by a query over them. Trimmed fractions still sort as the instants do (``24`` < ``24.002``
    < ``24.5``), which the macro's newest-stamp comparison of these texts relies on.
    """
    text = stamp.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return text.rstrip("0").rstrip(".")


def batch_of(metadata: str | None) -> str | None:
    """The batch id in a bronze commit's user metadata (:func:`commit_metadata`); None if none."""
    try:
        batch = json.loads(metadata or "").get("cdc_lakehouse_batch")
    except (ValueError, AttributeError):
        return None
    return batch.get("id") if isinstance(batch, dict) else None


def _merge(spark: SparkSession, batch: DataFrame, ranges: list[OffsetRange], batch_id: str, metadata: str) -> int:
    """MERGE ``batch`` into bronze, inserting the (topic, partition, offset) keys not there yet.

    The match is limited to the batch's offset ranges on the bronze side. That changes no
    result (a bronze row equal to a batch key lies in its range) but lets Delta skip, by the
    min/max statistics of each file, every bronze file that cannot hold those offsets: a later
    ingest reads a few files, not all of bronze.

    Returns the rows inserted. The commit carries ``metadata`` (:func:`commit_metadata`: the
    batch id, its format, topics and stamp) as its user metadata (``describe history`` shows
    which ingest batch wrote which version), which is also how :func:`_source_rows` finds its
    source row count again.
    """
    view = f"_bronze_batch_{batch_id}"
    batch.createOrReplaceTempView(view)
    metadata_key = "spark.databricks.delta.commitInfo.userMetadata"
    spark.conf.set(metadata_key, metadata)
    try:
        metrics = spark.sql(
            f"""
            merge into {TABLE} as t
            using {view} as s
            on ({range_filter(ranges, "t.")})
                and t.topic = s.topic and t.partition = s.partition and t.offset = s.offset
            when not matched then insert *
            """
        ).collect()
    finally:
        spark.conf.unset(metadata_key)
        spark.catalog.dropTempView(view)
    return int(metrics[0]["num_inserted_rows"]) if metrics else 0


def _append_new(
    spark: SparkSession, batch: DataFrame, ranges: list[OffsetRange], batch_id: str, metadata: str
) -> int | None:
    """Append ``batch`` when bronze holds no record in its offset ranges; the rows appended, or
    None when it does (or another writer committed first): then the caller MERGEs.

    Bronze without a record in the batch's ranges cannot hold any offset of the batch, so the
    MERGE's anti join only costs time. That is the first batch of every new lakehouse, and
    every later batch of a feed that lands each offset once (the next micro-batch of a few
    Kafka topics, the next dump of a kcat run). The first MERGE of a process costs most
    (Delta's MERGE and its join are code a cold JVM compiles first), and a large first batch
    pays the anti join for nothing.

    A plain append would be blind: two loaders landing the same offsets at once would both
    commit them. This one is a Delta transaction that reads the whole table
    (``readWholeTable``), started before the look at bronze (:func:`_new_offsets_transaction`);
    when another writer commits between its start and its commit, Delta refuses the commit (a
    DeltaConcurrentModificationException) and the caller MERGEs the batch instead. Delta offers
    that only in its Scala API (``DeltaLog.startTransaction``, ``writeFiles``, ``commit``): the
    SQL and DataFrame writers have no append that depends on what the table held. The files of
    a refused commit are left unreferenced (``vacuum`` removes them). Should a Delta version
    name those internals differently, the batch is MERGEd, with a warning.
    """
    from py4j.java_gateway import is_instance_of
    from py4j.protocol import Py4JError, Py4JJavaError
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    try:
        txn = _new_offsets_transaction(spark, ranges)
        if txn is None:
            return None
        operation = _write_operation(spark, metadata)
    except Py4JJavaError:
        raise  # thrown by Delta itself (the table, its log): not a matter of names
    except (Py4JError, TypeError) as exc:
        # Delta internals, as Delta 4.4 has them: another Delta may name them differently (py4j
        # finds no such method, or no such class). The MERGE lands the batch all the same
        # (Delta's public SQL), only slower.
        _warn_once(
            f"{TABLE}: Delta's transaction API is not the one this loader was written for "
            f"(Delta 4.4), so batches of new offsets are MERGEd, not appended: {str(exc).splitlines()[0]}"
        )
        return None
    rows = Observation(f"bronze_append_{batch_id}")
    observed = batch.observe(rows, F.count(F.lit(1)).alias("rows"))
    try:
        txn.commit(txn.writeFiles(observed._jdf), operation)
    except Py4JJavaError as exc:
        concurrent = "org.apache.spark.sql.delta.DeltaConcurrentModificationException"
        if is_instance_of(spark.sparkContext._gateway, exc.java_exception, concurrent):  # type: ignore[attr-defined]
            return None
        raise
    return int(rows.get["rows"])


def _write_operation(spark: SparkSession, metadata: str) -> Any:
    """Delta's ``Write`` operation (append) for the commit, with ``metadata`` as its user metadata
    (:func:`commit_metadata`, as the MERGE's commits carry)."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    write = getattr(getattr(jvm.org.apache.spark.sql.delta, "DeltaOperations$Write$"), "MODULE$")
    defaults = [getattr(write, f"apply$default${i}")() for i in range(2, 10)]
    defaults[2] = jvm.scala.Some(metadata)
    return write.apply(jvm.org.apache.spark.sql.SaveMode.Append, *defaults)


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    """Print ``message`` on stderr once per process (a loader lands many batches)."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"[lakehouse] warning: {message}", file=sys.stderr, flush=True)


def _new_offsets_transaction(spark: SparkSession, ranges: list[OffsetRange]) -> Any | None:
    """A Delta transaction on bronze that has read the whole table, which holds no record in
    ``ranges``; None when it holds one.

    The transaction starts first, so the look at bronze sees its snapshot or a later one: a
    record committed after the look is a commit after the transaction's start, which Delta
    refuses the append for. An empty snapshot (its checksum, the .crc of its commit, counts no
    file) needs no look; otherwise one query over the files whose statistics overlap the
    ranges, as the MERGE's filter (:func:`range_filter`): for a batch of new offsets Delta skips
    every file and reads none. A batch of more than :data:`MAX_TOPIC_RANGES` topics is looked
    for by one offset range over all of them (as the MERGE's filter is), which the earlier
    offsets of its topics mostly fall in: such a batch is MERGEd, as before this look.
    """
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    txn = jvm.io.delta.tables.DeltaTable.forName(spark._jsparkSession, TABLE).deltaLog().startTransaction()
    checksum = txn.snapshot().checksumOpt()
    if not checksum.isDefined() or checksum.get().numFiles() != 0:
        held = spark.sql(f"select 1 from {TABLE} where {range_filter(ranges)} limit 1").collect()
        if held:
            return None
    txn.readWholeTable()
    return txn


def _keep_conflicts(
    spark: SparkSession, records: DataFrame, ranges: list[OffsetRange], source: str, batch_id: str, stamp: datetime
) -> int:
    """Append to :data:`CONFLICTS_TABLE` the records of the batch whose coordinate bronze holds
    with another key or value; how many distinct versions were offered so.

    Called after the batch has landed, and only when it landed fewer records than it read, so
    that the comparison costs nothing for a batch of new offsets. Bronze then holds every
    coordinate of the batch, including the first copy of an offset the batch repeats: one join
    on the coordinates, read only from the bronze files of the batch's ranges (as the MERGE
    reads), finds both a replay with other bytes and a file that holds one offset twice with
    two payloads. Headers and timestamps are not compared: a dump and the broker render them
    differently for the same record.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    ensure_conflicts_table(spark)
    offered = records.select(*RECORD_COLUMNS).alias("s")
    held = spark.table(TABLE).where(range_filter(ranges)).alias("t")
    same_coordinate = [F.col(f"s.{c}") == F.col(f"t.{c}") for c in ("topic", "partition", "offset")]
    differs = ~(F.col("s.key").eqNullSafe(F.col("t.key")) & F.col("s.value").eqNullSafe(F.col("t.value")))
    conflicts = (
        offered.join(held, same_coordinate[0] & same_coordinate[1] & same_coordinate[2])
        .where(differs)
        .select(
            *(F.col(f"t.{c}").alias(c) for c in ("topic", "partition", "offset")),
            F.col("t.key").alias("landed_key"),
            F.col("t.value").alias("landed_value"),
            F.col("t.headers").alias("landed_headers"),
            F.col("t.timestamp").alias("landed_timestamp"),
            F.col("t.source").alias("landed_source"),
            F.col("t.batch_id").alias("landed_batch_id"),
            F.col("s.key").alias("offered_key"),
            F.col("s.value").alias("offered_value"),
            F.col("s.headers").alias("offered_headers"),
            F.col("s.timestamp").alias("offered_timestamp"),
            F.lit(source).alias("offered_source"),
            F.lit(batch_id).alias("batch_id"),
            F.lit(stamp).cast("timestamp").alias("detected_at"),
        )
        # one row per version offered: a file holding a payload three times offers it once
        .dropDuplicates(["topic", "partition", "offset", "offered_key", "offered_value"])
    )
    # written as found, not collected: a dump of the wrong cluster may conflict at every offset
    found = Observation(f"bronze_conflicts_{batch_id}")
    conflicts.observe(found, F.count(F.lit(1)).alias("rows")).write.format("delta").mode("append").saveAsTable(
        CONFLICTS_TABLE
    )
    return int(found.get["rows"])


def conflicts_note(conflicting: int) -> str:
    """``, conflicting N (kept in bronze.kafka_conflicts)`` for the summary line; nothing for none."""
    if not conflicting:
        return ""
    return f", conflicting {conflicting} (kept in {CONFLICTS_TABLE})"


def conflicts_status(conflicting: int, accepted: bool, source: str, batch_id: str | None = None) -> int:
    """The exit status after a landing that found ``conflicting`` records: 1 unless accepted.

    A conflict is a record whose (topic, partition, offset) bronze holds with other bytes: a
    recreated topic, a dump of another cluster. Bronze keeps its version either way; failing
    makes a script stop before it builds on a lakehouse fed from two histories.
    """
    if not conflicting:
        return 0
    where = f" where batch_id = '{batch_id}'" if batch_id else ""
    print(
        f"[lakehouse] ingest {source}: {conflicting} record(s) have a (topic, partition, offset) that bronze "
        f"holds with another key or value; bronze kept its own, both versions are in {CONFLICTS_TABLE} "
        f"(lakehouse sql \"select * from {CONFLICTS_TABLE}{where}\")"
        + ("" if accepted else ". Exit status 1: rerun with --accept-conflicts once reviewed"),
        file=sys.stderr,
        flush=True,
    )
    return 0 if accepted else 1


def ensure_conflicts_table(spark: SparkSession) -> None:
    """Create :data:`CONFLICTS_TABLE` if this lakehouse does not have it yet."""
    if not spark.catalog.tableExists(CONFLICTS_TABLE):
        spark.sql(CONFLICTS_DDL)


def _source_rows(spark: SparkSession, batch_id: str) -> int | None:
    """``numSourceRows`` of the MERGE commit whose user metadata names ``batch_id``; None when
    that MERGE committed nothing."""
    for row in spark.sql(f"describe history {TABLE} limit 10").collect():
        if batch_of(row["userMetadata"]) == batch_id:
            value = (row["operationMetrics"] or {}).get("numSourceRows")
            return int(value) if value is not None else None
    return None


#: Above this many topic partitions in one batch, the MERGE filter is one range per topic.
MAX_PARTITION_RANGES = 32

#: Above this many topics in one batch, the MERGE filter is one offset range for all of them.
MAX_TOPIC_RANGES = 32


def range_filter(ranges: list[OffsetRange], prefix: str = "") -> str:
    """SQL: the key columns (``prefix`` + name) lie in one of the batch's offset ranges.

    The filter stays small whatever the batch: Spark compiles it into the MERGE's scan, and a
    disjunction of hundreds of ranges (a micro-batch of two hundred topics) outgrows the 64 KB
    limit of a generated method, so Spark logs a compile error and interprets it row by row.
    A batch of very many partitions gets one range per topic, one of very many topics a topic
    list and one offset range: a wider filter is as exact for the MERGE (the join decides), it
    only skips fewer files.
    """
    by_topic: dict[str, list[OffsetRange]] = {}
    for r in ranges:
        by_topic.setdefault(r.topic, []).append(r)
    topic, partition, offset = (f"{prefix}`{c}`" for c in ("topic", "partition", "offset"))
    if len(by_topic) > MAX_TOPIC_RANGES:
        names = ", ".join(_sql_string(name) for name in by_topic)
        lo, hi = min(r.first for r in ranges), max(r.last for r in ranges)
        return f"({topic} in ({names}) and {offset} between {lo} and {hi})"
    coarse = len(ranges) > MAX_PARTITION_RANGES
    terms = []
    for name, parts in by_topic.items():
        if coarse:
            inner = f"{offset} between {min(p.first for p in parts)} and {max(p.last for p in parts)}"
        else:
            inner = " or ".join(
                f"({partition} = {p.partition} and {offset} between {p.first} and {p.last})" for p in parts
            )
        terms.append(f"({topic} = {_sql_string(name)} and ({inner}))")
    return " or ".join(terms) or "false"


def _sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
