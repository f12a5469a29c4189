"""The bronze table: every Kafka record exactly as it arrived, landed exactly once.

Both loaders (file dumps and the Kafka source) hand a DataFrame of raw records to
:func:`land`, which stamps it with the batch id and ingestion time and MERGEs it into
``bronze.kafka_records`` on (topic, partition, offset), inserting only what is not there yet.
Re-landing a record therefore adds nothing, whichever loader lands it and however often.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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


@dataclass(frozen=True)
class LandResult:
    """What one call of :func:`land` did."""

    batch_id: str
    read: int
    landed: int

    @property
    def skipped(self) -> int:
        """Records of the batch that were already in bronze (or repeated inside the batch)."""
        return self.read - self.landed


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
) -> LandResult:
    """MERGE ``records`` (columns :data:`RECORD_COLUMNS`) into bronze, inserting only new offsets.

    Offsets repeated inside the batch are landed once. ``fmt`` is the format id given at ingest
    (or ``None``); ``source`` says where the batch came from. Returns counts for the summary.
    """
    from pyspark.sql import functions as F

    ensure_bronze(spark)
    batch_id = batch_id or uuid.uuid4().hex
    read = records.count()
    if read == 0:
        return LandResult(batch_id, 0, 0)
    batch = (
        records.select(*RECORD_COLUMNS)
        .dropDuplicates(["topic", "partition", "offset"])
        .withColumn("format", F.lit(fmt).cast("string"))
        .withColumn("source", F.lit(source))
        .withColumn("ingested_at", F.current_timestamp())
        .withColumn("batch_id", F.lit(batch_id))
    )
    view = f"_bronze_batch_{batch_id}"
    batch.createOrReplaceTempView(view)
    try:
        # The topic list narrows the match to the files of those topics (data skipping).
        topics = [r.topic for r in batch.select("topic").distinct().collect()]
        topic_list = ", ".join("'" + t.replace("\\", "\\\\").replace("'", "\\'") + "'" for t in topics)
        metrics = spark.sql(
            f"""
            merge into {TABLE} as t
            using {view} as s
            on t.topic in ({topic_list})
                and t.topic = s.topic and t.partition = s.partition and t.offset = s.offset
            when not matched then insert *
            """
        ).collect()
    finally:
        spark.catalog.dropTempView(view)
    landed = int(metrics[0]["num_inserted_rows"]) if metrics else 0
    return LandResult(batch_id, read, landed)
