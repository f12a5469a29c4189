"""The loader's sink: what Spark's foreachBatch calls with each micro-batch, and its counts.

Each micro-batch is landed by :func:`lakehouse.bronze.land` (a MERGE on (topic, partition,
offset), or an append) with the offset ranges its checkpoint planned, and its counts are added
to the run's :class:`Totals`, which the summary, the builds and the replay report read.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lakehouse import bronze
from lakehouse.kafka_loader import progress
from lakehouse.kafka_loader.offsets import planned_ranges

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class Totals:
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



def make_sink(fmt: str | None, totals: Totals, checkpoint: Path):  # type: ignore[no-untyped-def]
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
            progress(
                f"batch {epoch}: {result.conflicting} record(s) conflict with what bronze holds at their "
                f"(topic, partition, offset); kept in {bronze.CONFLICTS_TABLE} (batch {result.batch_id})"
            )
        if epoch == totals.replay:
            # Spark reports no progress for this batch (SPARK-55271), so say what it did here.
            progress(
                f"batch {epoch} (re-run of the interrupted batch): read {result.read}, landed "
                f"{result.landed}, skipped {result.skipped} as already landed"
            )

    return land_batch
