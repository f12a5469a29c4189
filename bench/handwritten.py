"""The comparator: the job a data engineer writes by hand for the bench's four formats.

Databricks' documented pattern for CDC into Delta, as one PySpark program: read the kcat dump
with an explicit envelope schema, parse each format's payload with ``from_json`` and an explicit
schema of its own (the bench's row: id, balance DECIMAL(30,10), name, version; oms-json's key
adds region), keep the latest change per (table, key) by a window over the vendor's order, and
apply them with one Delta ``MERGE`` into a current-state table (created by the first run).

    .venv/bin/python bench/handwritten.py DUMP.jsonl TARGET_DIR

Each run reads one dump (the first load, then an increment) and prints one line,
``HANDWRITTEN <seconds of the job> <live rows after it> <live rows per table as JSON>``.

It is the yardstick of bench/run.py, so it does what such a job does and nothing more: no
bronze copy of the records, no quarantine (a message it cannot parse becomes a row of nulls
and is dropped), no history, no typed views per table, no late-change rule beyond "the newest
vendor position wins" (a late change older than the stored one would overwrite it), one
schema fixed in the code. The bench checks its answer as it checks the project's.
"""

from __future__ import annotations

import json
import sys
import time
from functools import reduce
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

ENVELOPE = "topic string, partition int, offset bigint, ts bigint, key string, payload string"
ROW = "id bigint, balance decimal(30,10), name string, version int"
OMS_ROW = "id bigint, region int, balance decimal(30,10), name string, version int"
CURRENT = ["source_table", "pk", "id", "region", "balance", "name", "version", "s1", "s2", "kafka_offset"]


def messages(dump: DataFrame, fmt: str, schema: str) -> DataFrame:
    """The records of one format's topics with their payload parsed (tombstones left out)."""
    return (dump.where(F.col("topic").startswith(f"bench.{fmt}.") & F.col("payload").isNotNull())
            .select("topic", "offset", F.from_json("payload", schema).alias("m")))


def binlog_file(column: F.Column | str) -> F.Column:
    """mysql-bin.000042 -> 42: the binlog file's number orders the files."""
    return F.regexp_extract(column, r"([0-9]+)$", 1).cast("bigint")


def changes(dump: DataFrame) -> DataFrame:
    """One row per change of every format: table, key, vendor order (s1, s2, offset), delete, row."""
    def shaped(frame: DataFrame, table: str, row: str, deleted: F.Column, s1: F.Column, s2: F.Column,
               region: F.Column | None = None) -> DataFrame:
        return frame.select(
            F.col(table).alias("source_table"), deleted.alias("deleted"), s1.alias("s1"), s2.alias("s2"),
            F.col("offset").alias("kafka_offset"), F.col(f"{row}.id").cast("bigint").alias("id"),
            (region if region is not None else F.lit(None)).cast("int").alias("region"),
            F.col(f"{row}.balance").cast("decimal(30,10)").alias("balance"), F.col(f"{row}.name").alias("name"),
            F.col(f"{row}.version").cast("int").alias("version"))

    debezium = messages(dump, "debezium-json", f"before struct<{ROW}>, after struct<{ROW}>, op string, "
                        "source struct<`table`: string, file: string, pos: bigint>")
    debezium = shaped(debezium.withColumn("r", F.coalesce("m.after", "m.before")), "m.source.table", "r",
                      F.col("m.op") == "d", binlog_file("m.source.file"), F.col("m.source.pos"))
    canal = messages(dump, "canal-json", "data array<struct<id: string, balance: string, name: string, "
                     "version: string>>, `table` string, type string, es bigint, id bigint")
    canal = shaped(canal.withColumn("r", F.explode("m.data")), "m.table", "r", F.col("m.type") == "DELETE",
                   F.col("m.es"), F.col("m.id"))
    maxwell = messages(dump, "maxwell-json", f"`table` string, type string, position string, data struct<{ROW}>")
    maxwell = shaped(maxwell, "m.table", "m.data", F.col("m.type") == "delete",
                     binlog_file(F.regexp_extract("m.position", r"^([^:]*)", 1)),
                     F.regexp_extract("m.position", r":([0-9]+)$", 1).cast("bigint"))
    oms = messages(dump, "oms-json", f"recordType string, prevStruct struct<{OMS_ROW}>, "
                   f"postStruct struct<{OMS_ROW}>, allMetaData struct<table_name: string, storeDataSequence: string>")
    oms = shaped(oms.where(F.col("m.recordType").isin("INSERT", "UPDATE", "DELETE"))
                 .withColumn("r", F.coalesce("m.postStruct", "m.prevStruct")),
                 "m.allMetaData.table_name", "r", F.col("m.recordType") == "DELETE",
                 F.substring("m.allMetaData.storeDataSequence", 1, 10).cast("bigint"),
                 F.expr("cast(substr(m.allMetaData.storeDataSequence, 11) as bigint)"), F.col("r.region"))
    union = reduce(DataFrame.unionByName, [debezium, canal, maxwell, oms])
    return union.withColumn("pk", F.concat_ws("|", "id", "region")).where(F.col("source_table").isNotNull())


def latest(all_changes: DataFrame) -> DataFrame:
    """The newest change of each (table, key) in the vendor's order."""
    newest_first = Window.partitionBy("source_table", "pk").orderBy(
        F.col("s1").desc(), F.col("s2").desc(), F.col("kafka_offset").desc())
    return all_changes.withColumn("n", F.row_number().over(newest_first)).where("n = 1").drop("n")


def apply(spark: SparkSession, newest: DataFrame, target: Path) -> None:
    """MERGE the newest changes into the current-state table (a plain write when there is none)."""
    path = str(target)
    if not (target / "_delta_log").is_dir():
        newest.where(~F.col("deleted")).select(*CURRENT).write.format("delta").save(path)
        return
    newest.createOrReplaceTempView("newest_changes")
    spark.sql(f"""
        merge into delta.`{path}` as current
        using newest_changes as change
        on current.source_table = change.source_table and current.pk = change.pk
        when matched and change.deleted then delete
        when matched then update set {", ".join(f"{c} = change.{c}" for c in CURRENT)}
        when not matched and not change.deleted then insert ({", ".join(CURRENT)})
            values ({", ".join(f"change.{c}" for c in CURRENT)})
    """)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dump_path, target = Path(sys.argv[1]), Path(sys.argv[2])
    target.parent.mkdir(parents=True, exist_ok=True)
    from lakehouse.session import get_spark  # the project's session settings: the same JVM, memory and jars

    spark = get_spark("bench-handwritten", root=target.parent / "spark")
    started = time.monotonic()
    dump = spark.read.schema(ENVELOPE).json(str(dump_path))
    apply(spark, latest(changes(dump)), target)
    seconds = time.monotonic() - started
    per_table = {r["source_table"]: r["n"] for r in spark.read.format("delta").load(str(target))
                 .groupBy("source_table").agg(F.count("*").alias("n")).collect()}
    print(f"HANDWRITTEN {seconds:.3f} {sum(per_table.values())} {json.dumps(per_table, sort_keys=True)}")


if __name__ == "__main__":
    main()
