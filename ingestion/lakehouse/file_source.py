"""Read a dump file of Kafka records into the DataFrame shape :func:`lakehouse.bronze.land` takes.

Two line shapes are accepted (SPEC "ingest from a dump"):

* without ``--topic``: the JSON envelope ``kcat -C -J`` prints per record (``topic``,
  ``partition``, ``offset``, ``ts``, ``key``, ``payload``, optional ``headers``). A line that
  is not such an envelope is not dropped: it lands under the topic :data:`UNROUTED_TOPIC`
  (offset = its line number) so that silver quarantines it with the reason.
* with ``--topic``: every line is a bare message value. Bare values carry no coordinates, so
  they get partition 0 and offsets after the highest offset already landed for that topic, as
  a producer appending to the topic would.

Lines are parsed by Spark, not Python, so a dump of millions of records stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Topic under which non-envelope lines of an envelope dump land (quarantined downstream).
UNROUTED_TOPIC = "_lakehouse_unrouted"

_ENVELOPE_SCHEMA = (
    "topic string, partition int, offset bigint, ts bigint, tstype string, "
    "key string, payload string, headers string"
)


def _numbered_lines(spark: SparkSession, path: str) -> DataFrame:
    """The file's lines with their 0-based line number, in file order."""
    lines = spark.read.option("lineSep", "\n").text(path)
    return (
        lines.rdd.zipWithIndex()
        .map(lambda pair: (pair[0][0], pair[1]))
        .toDF("line string, line_no bigint")
    )


def read_envelopes(spark: SparkSession, path: str) -> DataFrame:
    """Records of a ``kcat -J`` dump; non-envelope lines routed to :data:`UNROUTED_TOPIC`."""
    from pyspark.sql import functions as F

    lines = _numbered_lines(spark, path).where(F.length(F.trim("line")) > 0)
    env = lines.withColumn("e", F.from_json("line", _ENVELOPE_SCHEMA))
    is_envelope = (
        F.col("e.topic").isNotNull()
        & F.col("e.partition").isNotNull()
        & F.col("e.offset").isNotNull()
    )
    headers = _kcat_headers(F.col("e.headers"))
    return env.select(
        F.when(is_envelope, F.col("e.topic")).otherwise(F.lit(UNROUTED_TOPIC)).alias("topic"),
        F.when(is_envelope, F.col("e.partition")).otherwise(F.lit(0)).alias("partition"),
        F.when(is_envelope, F.col("e.offset")).otherwise(F.col("line_no")).alias("offset"),
        F.when(is_envelope, F.timestamp_millis(F.col("e.ts"))).alias("timestamp"),
        F.when(is_envelope, F.encode(F.col("e.key"), "UTF-8")).alias("key"),
        F.when(is_envelope, F.encode(F.col("e.payload"), "UTF-8"))
        .otherwise(F.encode(F.col("line"), "UTF-8"))
        .alias("value"),
        F.when(is_envelope, headers).alias("headers"),
    )


def _kcat_headers(raw):  # type: ignore[no-untyped-def]
    """kcat prints headers as ``["k1","v1","k2","v2"]``; an object ``{"k": "v"}`` is accepted too."""
    from pyspark.sql import functions as F

    flat = F.from_json(raw, "array<string>")
    pairs = F.transform(
        F.sequence(F.lit(0), (F.size(flat) / 2 - 1).cast("int")),
        lambda i: F.struct(
            F.element_at(flat, (i * 2 + 1).cast("int")).alias("key"),
            F.encode(F.element_at(flat, (i * 2 + 2).cast("int")), "UTF-8").alias("value"),
        ),
    )
    as_map = F.from_json(raw, "map<string,string>")
    from_map = F.transform(
        F.map_entries(as_map),
        lambda e: F.struct(e["key"].alias("key"), F.encode(e["value"], "UTF-8").alias("value")),
    )
    return (
        F.when(raw.isNull(), F.lit(None))
        .when(F.size(flat) > 0, pairs)
        .when(as_map.isNotNull(), from_map)
        .otherwise(F.array().cast("array<struct<key:string,value:binary>>"))
    )


def read_bare_values(spark: SparkSession, path: str, topic: str, first_offset: int) -> DataFrame:
    """Bare message values, one per line, as records of ``topic`` partition 0 from ``first_offset``."""
    from pyspark.sql import functions as F

    lines = _numbered_lines(spark, path).where(F.length(F.trim("line")) > 0)
    return lines.select(
        F.lit(topic).alias("topic"),
        F.lit(0).alias("partition"),
        (F.col("line_no") + F.lit(first_offset)).alias("offset"),
        F.current_timestamp().alias("timestamp"),
        F.lit(None).cast("binary").alias("key"),
        F.encode(F.col("line"), "UTF-8").alias("value"),
        F.lit(None).cast("array<struct<key:string,value:binary>>").alias("headers"),
    )


def next_offset(spark: SparkSession, table: str, topic: str) -> int:
    """One past the highest offset landed for ``topic`` partition 0 (0 for a new topic)."""
    from pyspark.sql import functions as F

    row = (
        spark.table(table)
        .where((F.col("topic") == topic) & (F.col("partition") == 0))
        .agg(F.max("offset").alias("m"))
        .collect()[0]
    )
    return 0 if row["m"] is None else int(row["m"]) + 1
