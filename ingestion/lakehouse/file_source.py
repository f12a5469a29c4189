"""Read a dump file of Kafka records into the DataFrame shape :func:`lakehouse.bronze.land` takes.

Two line shapes are accepted (SPEC "ingest from a dump"):

* without ``--topic``: the JSON envelope ``kcat -C -J`` prints per record (``topic``,
  ``partition``, ``offset``, ``ts``, ``key``, ``payload``, optional ``headers``). A line that
  is not such an envelope is not dropped: it lands under the topic :data:`UNROUTED_TOPIC`
  (offset = its line number), its bytes as they are, with what it is (not JSON, an envelope
  without ``offset``, a partition that is negative or beyond the range of an int, ...) in the
  header :data:`UNROUTED_REASON_HEADER`, so that silver quarantines it with that reason. A
  record with such coordinates would otherwise reach silver with an apply order that sorts
  wrong (cdc_apply_order), and its data test would hold every gold model back.

The file is read as bytes: a line is never decoded as UTF-8 on its way to bronze (Spark's
text reader keeps the bytes of a line as they are). Keys, values and headers are JSON strings
of the envelope, which the JVM's JSON parser would decode with U+FFFD in place of bytes that
are not UTF-8 (what kcat prints for a binary value); the few envelope lines that are not UTF-8
are read by Python instead (:func:`_raw_fields`), which keeps those bytes, so that bronze holds
what the broker held and silver quarantines it as not UTF-8.
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

#: Header of an unrouted line: why it is not an envelope (file, line, what), silver's reason.
UNROUTED_REASON_HEADER = "lakehouse.unrouted_reason"

#: The coordinates as text, so that a line whose partition is -1, 1.5 or 2^31 can be named as such.
_ENVELOPE_SCHEMA = (
    "topic string, partition string, offset string, ts bigint, tstype string, "
    "key string, payload string, headers string"
)

#: What the apply order (macro cdc_apply_order) and bronze's columns hold: int and bigint from 0.
MAX_PARTITION = 2**31 - 1
MAX_OFFSET = 2**63 - 1

_RECORD_FIELDS = "key binary, payload binary, headers array<struct<key:string,value:binary>>"

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
    #: What the first few of them are, with their line numbers (for the ingest's message).
    unrouted_examples: tuple[str, ...] = ()


def read_dump(spark: SparkSession, path: str, topic: str | None = None, first_offset: int = 0) -> Dump:
    """The dump at ``path``: kcat -J envelopes, or with ``topic`` bare values from ``first_offset``."""
    # One listing of the file for every pass: they all read the same bytes in the same splits,
    # so they see the same lines, even of a dump that is still being appended to.
    lines = _lines(spark, path)
    if topic is not None:
        return _bare_dump(lines, topic, first_offset)
    return _envelope_dump(lines, path)


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
    """Non-blank lines with their parsed envelope ``e``, its coordinates (``partition``,
    ``offset``: null unless an int and a bigint from 0) and whether it is one (``is_envelope``).

    Both passes over the file use exactly this, so they agree line by line on what is an
    envelope. (The explicit parse mode is the default; an option also keeps Spark from
    narrowing the parse to the fields one pass happens to read.)
    """
    from pyspark.sql import functions as F

    envelope = F.from_json("value", _ENVELOPE_SCHEMA, {"mode": "PERMISSIVE"})
    parsed = _numbered(lines, envelope.alias("e")).where(_is_record(F.col(_LINE)))
    partition = F.when(F.col("e.partition").rlike("^[0-9]{1,10}$"), F.col("e.partition").try_cast("int"))
    offset = F.when(F.col("e.offset").rlike("^[0-9]{1,19}$"), F.col("e.offset").try_cast("bigint"))
    coordinates = parsed.select("*", partition.alias("partition"), offset.alias("offset"))
    is_envelope = (F.length(F.col("e.topic")) > 0) & F.col("partition").isNotNull() & F.col("offset").isNotNull()
    return coordinates.withColumn("is_envelope", is_envelope)


def _what_it_is(line: Column) -> Column:
    """Why a line (that :func:`_envelopes` found no envelope) is not one, in a few words."""
    from pyspark.sql import functions as F

    keys = F.json_object_keys(line)
    missing = F.array_except(F.array(*(F.lit(k) for k in ("topic", "partition", "offset"))), keys)

    def shown(field: str) -> Column:
        text = F.col(f"e.{field}")
        return F.when(F.length(text) > 40, F.concat(F.substring(text, 1, 40), F.lit("..."))).otherwise(text)

    return (
        F.when(F.get_json_object(line, "$").isNull(), F.lit("not JSON"))
        .when(F.json_array_length(line).isNotNull(), F.lit("a JSON array, not an envelope object"))
        .when(keys.isNull(), F.lit("a JSON value that is not an object"))
        .when(F.size(missing) > 0, F.concat(F.lit("an envelope without "), F.array_join(missing, ", ")))
        .when(F.col("e.topic").isNull() | (F.col("e.topic") == ""), F.lit("an envelope whose topic is null or empty"))
        .when(
            F.col("partition").isNull(),
            F.concat(F.lit("partition "), F.coalesce(shown("partition"), F.lit("null")),
                     F.lit(f" is not an integer from 0 to {MAX_PARTITION}")),
        )  # fmt: skip
        .otherwise(
            F.concat(F.lit("offset "), F.coalesce(shown("offset"), F.lit("null")),
                     F.lit(f" is not an integer from 0 to {MAX_OFFSET}"))
        )  # fmt: skip
    )


def _unrouted_reason(path: str, line_number: Column) -> Column:
    """The quarantine reason of a line that is not an envelope: what it is, and where."""
    from pyspark.sql import functions as F

    return F.concat(
        F.lit("not a kcat -C -J envelope ("),
        _what_it_is(F.col(_LINE)),
        F.lit(") at line "),
        (line_number + F.lit(1)).cast("string"),
        F.lit(f" of {path}"),
    )


def _envelope_dump(lines: DataFrame, path: str) -> Dump:
    """First pass over an envelope dump; the records that the MERGE will parse again."""
    from pyspark.sql import functions as F

    envelopes = _envelopes(lines)
    keys = envelopes.select(
        _ROW_ID,
        F.when(F.col("is_envelope"), F.col("e.topic")).alias("topic"),
        F.when(F.col("is_envelope"), F.col("partition")).alias("partition"),
        F.when(F.col("is_envelope"), F.col("offset")).alias("offset"),
        (F.col("is_envelope") & ~F.is_valid_utf8(F.col(_LINE))).alias("not_utf8"),
    )
    rows = aggregate_offsets(keys, F.max(_ROW_ID).alias("last_row"), F.count_if("not_utf8").alias("not_utf8"))
    last_row = max((r["last_row"] for r in rows), default=-1)
    not_utf8 = sum(int(r["not_utf8"]) for r in rows)
    stats = ranges_of(rows)
    unrouted = sum(r.records for r in stats if r.topic is None)
    ranges = [r for r in stats if r.topic is not None]
    line_number = None
    examples: tuple[str, ...] = ()
    if unrouted:
        splits = _split_lines(lines)
        line_number = _line_number(splits)
        ranges = _with_unrouted(ranges, unrouted, sum(s.lines for s in splits))
        found = envelopes.where(~F.col("is_envelope")).select(_unrouted_reason(path, line_number).alias("r"))
        examples = tuple(r["r"] for r in found.limit(5).collect())
    records = _envelope_records(envelopes, line_number, path, raw_bytes=not_utf8 > 0)
    return Dump(_seen(records, last_row), ranges, unrouted, examples)


def _envelope_records(envelopes: DataFrame, line_number: Column | None, path: str, *, raw_bytes: bool) -> DataFrame:
    """Records of the envelopes; other lines (when ``line_number`` is given) by line number.

    ``raw_bytes``: some envelope line is not UTF-8, and those lines' key, payload and headers
    are read by :func:`_raw_fields` (in Python, a branch of their own), the rest on the JVM.
    """
    from pyspark.sql import functions as F

    env = F.col("is_envelope")
    # Without a line number no line may be anything but an envelope (the first pass found
    # none); should one be, its null offset fails bronze's NOT NULL check instead of landing.
    other_offset = line_number if line_number is not None else F.lit(None).cast("bigint")
    reason = _unrouted_reason(path, other_offset)
    reason_header = F.struct(F.lit(UNROUTED_REASON_HEADER).alias("key"), F.encode(reason, "UTF-8").alias("value"))
    unrouted_headers = F.array(reason_header)

    def select(frame: DataFrame, key: Column, payload: Column, headers: Column) -> DataFrame:
        return frame.select(
            F.when(env, F.col("e.topic")).otherwise(F.lit(UNROUTED_TOPIC)).alias("topic"),
            F.when(env, F.col("partition")).otherwise(F.lit(0)).alias("partition"),
            F.when(env, F.col("offset")).otherwise(other_offset).alias("offset"),
            F.when(env, F.timestamp_millis(F.col("e.ts"))).alias("timestamp"),
            F.when(env, key).alias("key"),
            # the line's own bytes, not re-encoded: bytes that are not UTF-8 stay as they were
            F.when(env, payload).otherwise(F.col(_LINE).cast("binary")).alias("value"),
            F.when(env, headers).otherwise(unrouted_headers).alias("headers"),
            _ROW_ID,
        )

    jvm_read = (
        F.encode(F.col("e.key"), "UTF-8"),
        F.encode(F.col("e.payload"), "UTF-8"),
        _kcat_headers(F.col("e.headers")),
    )
    if not raw_bytes:
        return select(envelopes, *jvm_read)
    not_utf8 = env & ~F.is_valid_utf8(F.col(_LINE))
    raw = envelopes.where(not_utf8).withColumn("raw", _raw_fields()(F.col(_LINE).cast("binary")))
    return select(envelopes.where(~not_utf8), *jvm_read).unionByName(
        select(raw, F.col("raw.key"), F.col("raw.payload"), F.col("raw.headers"))
    )


def _raw_fields():  # type: ignore[no-untyped-def]  # a pyspark UDF
    """A UDF: an envelope line's bytes -> its key, payload and headers as the bytes they stand for.

    Python decodes the line with ``surrogateescape``, so each byte that is not UTF-8 becomes a
    lone surrogate that JSON parsing carries through a string and encoding gives back as the
    same byte. The function is defined here, not at module level, so that Spark ships it by
    value to workers that do not have this package.
    """
    from pyspark.sql.functions import udf

    def raw_fields(line):  # noqa: ANN001, ANN202 - no hints: pyspark reads them as a pandas UDF's
        import json

        def raw(value: object) -> bytes | None:
            if value is None:
                return None
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            try:
                return text.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # an escaped lone surrogate (\ud800) stands for no byte
                return text.encode("utf-8", "replace")

        def name(value: object) -> str:
            return (raw(value) or b"").decode("utf-8", "replace")

        if line is None:
            return None
        try:
            doc = json.loads(bytes(line).decode("utf-8", "surrogateescape"))
        except ValueError:
            return None
        headers = doc.get("headers")
        pairs: list[tuple[str, bytes | None]] | None = None
        if isinstance(headers, list):
            pairs = [(name(headers[i]), raw(headers[i + 1])) for i in range(0, len(headers) - 1, 2)]
        elif isinstance(headers, dict):
            pairs = [(name(k), raw(v)) for k, v in headers.items()]
        return raw(doc.get("key")), raw(doc.get("payload")), pairs

    return udf(raw_fields, _RECORD_FIELDS)


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
        F.col(_LINE).cast("binary").alias("value"),  # the line's bytes, UTF-8 or not
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
