"""Read a dump file of Kafka records into the DataFrame shape :func:`lakehouse.bronze.land` takes.

Two line shapes are accepted (SPEC "ingest from a dump"):

* without ``--topic``: the JSON envelope ``kcat -C -J`` prints per record (``topic``,
  ``partition``, ``offset``, ``ts``, ``key``, ``payload``, optional ``headers``). A line that
  is not such an envelope is not dropped: it lands under the topic :data:`UNROUTED_TOPIC`
  (offset = its line number) so that silver quarantines it with the reason.
* with ``--topic``: every line is a bare message value. Bare values carry no coordinates, so
  they get partition 0 and offsets after the highest offset already landed for that topic, as
  a producer appending to the topic would.

Everything runs on the JVM: no Python worker sees a line. :func:`read_dump` makes one pass over
the file that yields what landing needs up front (per topic partition the offset range, the
record count and whether an offset repeats; how many lines are not envelopes) and returns the
records as a DataFrame that the MERGE reads in a second pass. Two passes over the text beat
parsing once and persisting the parse: writing and re-reading a persisted copy costs more than
parsing the JSON again, and nothing of the file is held in memory however big it is.

Line numbers (0-based, blank lines included) are only computed when some line needs one (not
an envelope, or a bare value). They come from Spark's own row ids: every split of the file is
counted once, and a row's number is its split's first line number plus its position in the
split. That is what ``RDD.zipWithIndex`` does, without sending the lines through Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakehouse.bronze import RECORD_COLUMNS, OffsetRange, aggregate_offsets, ranges_of

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: Topic under which non-envelope lines of an envelope dump land (quarantined downstream).
UNROUTED_TOPIC = "_lakehouse_unrouted"

_ENVELOPE_SCHEMA = (
    "topic string, partition int, offset bigint, ts bigint, tstype string, "
    "key string, payload string, headers string"
)

#: Columns of :func:`_lines`: the split a line was read in, Spark's row id, the line.
_SPLIT, _ROW_ID, _LINE = "_split", "_row_id", "_line"


@dataclass(frozen=True)
class Dump:
    """A dump file ready to land: its records and what the first pass learnt about them."""

    #: Columns of ``bronze.RECORD_COLUMNS``; reading it parses the file again (lazily).
    records: DataFrame
    #: Per topic partition: offsets, record count, repeats (what ``bronze.land`` takes).
    ranges: list[OffsetRange]
    #: Lines of an envelope dump that are not envelopes (landed under :data:`UNROUTED_TOPIC`).
    unrouted: int


def read_dump(spark: SparkSession, path: str, topic: str | None = None, first_offset: int = 0) -> Dump:
    """The dump at ``path``: kcat -J envelopes, or with ``topic`` bare values from ``first_offset``."""
    # One listing of the file for every pass: they all read the same bytes in the same splits,
    # so they see the same lines, even of a dump that is still being appended to.
    lines = _lines(spark, path)
    if topic is not None:
        return _bare_dump(lines, topic, first_offset)
    return _envelope_dump(lines)


def _lines(spark: SparkSession, path: str) -> DataFrame:
    """The file's lines (column ``value``), split on ``\\n`` only."""
    return spark.read.option("lineSep", "\n").text(path)


def _numbered(lines: DataFrame, *columns: Column) -> DataFrame:
    """``lines`` with the split each was read in, Spark's row id in it, the line, ``columns``.

    One projection, right at the scan and before any filter, so that the ids number every
    line. Its ids make it non-deterministic, which also keeps Spark from pushing a later filter
    below it: the columns computed here (the parsed JSON) are computed once per line.
    """
    from pyspark.sql import functions as F

    return lines.select(
        F.input_file_block_start().alias(_SPLIT),
        F.monotonically_increasing_id().alias(_ROW_ID),
        F.col("value").alias(_LINE),
        *columns,
    )


def _is_record(line: Column) -> Column:
    """Lines that hold a record: every line but blank ones."""
    from pyspark.sql import functions as F

    return F.length(F.trim(line)) > 0


# --------------------------------------------------------------------------- kcat -J envelopes


def _envelopes(lines: DataFrame) -> DataFrame:
    """Non-blank lines with their parsed envelope ``e`` and whether it is one (``is_envelope``).

    Both passes over the file use exactly this, so they agree line by line on what is an
    envelope. (The explicit parse mode is the default; an option also keeps Spark from
    narrowing the parse to the fields one pass happens to read.)
    """
    from pyspark.sql import functions as F

    envelope = F.from_json("value", _ENVELOPE_SCHEMA, {"mode": "PERMISSIVE"})
    parsed = _numbered(lines, envelope.alias("e")).where(_is_record(F.col(_LINE)))
    is_envelope = F.col("e.topic").isNotNull() & F.col("e.partition").isNotNull() & F.col("e.offset").isNotNull()
    return parsed.withColumn("is_envelope", is_envelope)


def _envelope_dump(lines: DataFrame) -> Dump:
    """First pass over an envelope dump; the records that the MERGE will parse again."""
    from pyspark.sql import functions as F

    envelopes = _envelopes(lines)
    keys = envelopes.select(
        _ROW_ID,
        F.when(F.col("is_envelope"), F.col("e.topic")).alias("topic"),
        F.when(F.col("is_envelope"), F.col("e.partition")).alias("partition"),
        F.when(F.col("is_envelope"), F.col("e.offset")).alias("offset"),
    )
    rows = aggregate_offsets(keys, F.max(_ROW_ID).alias("last_row"))
    last_row = max((r["last_row"] for r in rows), default=-1)
    stats = ranges_of(rows)
    unrouted = sum(r.records for r in stats if r.topic is None)
    ranges = [r for r in stats if r.topic is not None]
    line_number = None
    if unrouted:
        splits = _split_lines(lines)
        line_number = _line_number(splits)
        ranges = _with_unrouted(ranges, unrouted, sum(s.lines for s in splits))
    return Dump(_seen(_envelope_records(envelopes, line_number), last_row), ranges, unrouted)


def _envelope_records(envelopes: DataFrame, line_number: Column | None) -> DataFrame:
    """Records of the envelopes; other lines (when ``line_number`` is given) by line number."""
    from pyspark.sql import functions as F

    env = F.col("is_envelope")
    # Without a line number no line may be anything but an envelope (the first pass found
    # none); should one be, its null offset fails bronze's NOT NULL check instead of landing.
    other_offset = line_number if line_number is not None else F.lit(None).cast("bigint")
    return envelopes.select(
        F.when(env, F.col("e.topic")).otherwise(F.lit(UNROUTED_TOPIC)).alias("topic"),
        F.when(env, F.col("e.partition")).otherwise(F.lit(0)).alias("partition"),
        F.when(env, F.col("e.offset")).otherwise(other_offset).alias("offset"),
        F.when(env, F.timestamp_millis(F.col("e.ts"))).alias("timestamp"),
        F.when(env, F.encode(F.col("e.key"), "UTF-8")).alias("key"),
        F.when(env, F.encode(F.col("e.payload"), "UTF-8")).otherwise(F.encode(F.col(_LINE), "UTF-8")).alias("value"),
        F.when(env, _kcat_headers(F.col("e.headers"))).alias("headers"),
        _ROW_ID,
    )


def _seen(records: DataFrame, last_row: int) -> DataFrame:
    """The records of the lines the first pass saw: Spark's row ids up to its last one.

    Every pass reads the same bytes in the same splits (one listing of the file), so it sees the
    same lines, except that a dump still being written may end its last split with one more line
    (Hadoop's line reader reads the line that starts where the split ends). That line would lie
    outside the offset ranges the MERGE checks bronze in, so it waits for the next ingest. (A
    filter on the row id only stays above the projection that parses the JSON; one on parsed
    columns would be pushed below it and parse every line a second time.)
    """
    from pyspark.sql import functions as F

    return records.where(F.col(_ROW_ID) <= last_row).select(*RECORD_COLUMNS)


def _with_unrouted(ranges: list[OffsetRange], unrouted: int, lines: int) -> list[OffsetRange]:
    """``ranges`` plus the non-envelope lines: partition 0 of :data:`UNROUTED_TOPIC`, by line number.

    Their offsets are line numbers, so they lie in 0..lines-1. Envelopes that name that topic
    themselves could collide with a line number: then the batch counts as having repeats.
    """
    own = [r for r in ranges if (r.topic, r.partition) == (UNROUTED_TOPIC, 0)]
    rest = [r for r in ranges if (r.topic, r.partition) != (UNROUTED_TOPIC, 0)]
    first, last, records = 0, max(lines - 1, 0), unrouted
    for r in own:
        first, last, records = min(first, r.first), max(last, r.last), records + r.records
    return [*rest, OffsetRange(UNROUTED_TOPIC, 0, first, last, records, repeated=bool(own))]


# --------------------------------------------------------------------------- bare values


def _bare_dump(lines: DataFrame, topic: str, first_offset: int) -> Dump:
    """Bare values of ``topic``: partition 0, offset ``first_offset`` + line number."""
    from pyspark.sql import functions as F

    splits = _split_lines(lines)
    records = sum(s.records for s in splits)
    last = first_offset + max(sum(s.lines for s in splits) - 1, 0)
    last_row = max((s.first_row_id + s.lines - 1 for s in splits), default=-1)
    ranges = [OffsetRange(topic, 0, first_offset, last, records)] if records else []
    bare = _numbered(lines).where(_is_record(F.col(_LINE))).select(
        F.lit(topic).alias("topic"),
        F.lit(0).alias("partition"),
        (_line_number(splits) + F.lit(first_offset)).alias("offset"),
        F.current_timestamp().alias("timestamp"),
        F.lit(None).cast("binary").alias("key"),
        F.encode(F.col(_LINE), "UTF-8").alias("value"),
        F.lit(None).cast("array<struct<key:string,value:binary>>").alias("headers"),
        _ROW_ID,
    )
    return Dump(_seen(bare, last_row), ranges, 0)


# --------------------------------------------------------------------------- line numbers


@dataclass(frozen=True)
class _Split:
    """One split of the file as Spark reads it: where it starts, its lines, its first row id."""

    start: int
    lines: int
    records: int
    first_row_id: int


def _split_lines(lines: DataFrame) -> list[_Split]:
    """Lines (and non-blank ones) of every split of the file, in file order: one text scan."""
    from pyspark.sql import functions as F

    rows = (
        _numbered(lines)
        .groupBy(_SPLIT)
        .agg(
            F.count(F.lit(1)).alias("lines"),
            F.count_if(_is_record(F.col(_LINE))).alias("records"),
            F.min(_ROW_ID).alias("first"),
        )
        .collect()
    )
    splits = (_Split(int(r[_SPLIT]), int(r["lines"]), int(r["records"]), int(r["first"])) for r in rows)
    return sorted(splits, key=lambda s: s.start)


def _line_number(splits: list[_Split]) -> Column:
    """Each row's 0-based line number in the file: lines of earlier splits + position in its own.

    Inside a split Spark's row ids are consecutive from the split's first one, in file order,
    and a split is read the same way by every scan of the same file.
    """
    from pyspark.sql import functions as F

    shift: list[Column] = []
    before = 0
    for split in splits:
        shift += [F.lit(split.start), F.lit(before - split.first_row_id)]
        before += split.lines
    if not shift:
        return F.col(_ROW_ID)
    return F.col(_ROW_ID) + F.element_at(F.create_map(*shift), F.col(_SPLIT))


# --------------------------------------------------------------------------- headers, offsets


def _kcat_headers(raw: Column) -> Column:
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
