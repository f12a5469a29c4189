"""Synthetic CDC topics for the benchmark: N changes over many tables, skewed keys, four vendor formats.

The generator simulates the source databases and writes what four CDC tools would publish for
their changes, each in its own format as the real tool writes it:

* ``debezium-json``: Debezium MySQL connector through Kafka Connect's JsonConverter with
  ``schemas.enable=false`` (the usual production setting: with the schema, three quarters of the
  bytes of these small rows would be the same schema again) and ``decimal.format=NUMERIC``
  (DECIMAL as an exact JSON number), the key ``{"id": ..}`` in the Kafka record key, a tombstone
  (null value) after every delete;
* ``canal-json``: Canal's flat message, every value a JSON string, ``old`` holding only the
  changed columns of an UPDATE, ordered by ``es`` then the Canal batch ``id``;
* ``maxwell-json``: Maxwell's daemon with ``output_binlog_position`` and
  ``output_primary_key_columns``, one row per transaction (``commit: true``), ``old`` holding
  the changed columns, DECIMAL as long-digit JSON numbers, Maxwell's default Kafka key
  ``{"database":..,"table":..,"pk.id":..}``;
* ``oms-json``: OceanBase OMS "Default" serialization (prevStruct / postStruct / allMetaData /
  recordType), tables of a partitioned OceanBase tenant whose key is (id, region), so the key
  names and values are joined with \\u0001; DECIMAL as Java's BigDecimal.toString() writes it
  (plain, or scientific such as 0E-10 for zero and tiny values); storeDataSequence is
  {seconds}{five-digit increment}; a HEARTBEAT record now and then.

Every row has the columns id (BIGINT), balance (DECIMAL(30,10): 22 significant digits, beyond
a double, so exactness is exercised; zero, tiny and negative values too), name (VARCHAR, with
quotes, backslashes, control characters and non-ASCII text now and then, sometimes NULL) and
version (INT). Tables are picked with a Zipf-like skew (a few tables take most changes, the same
share for every format) and so are rows inside a table (a few hot rows take most updates, as in
real OLTP tables); every table gets an insert first, then 70% updates, 20% inserts and 10%
deletes. A change costs O(1) whatever the table size: live rows sit in a list in a stable order,
the victim is picked by a log-uniform rank over it, and a delete swaps the last row into the
hole.

Messages are written as ``kcat -C -J`` lines of every topic in one file, one topic per (format,
table) with one partition and offsets in production order. Canal's shape is shared with Huawei
DRS, so a topic's format cannot be told from its messages: the build is told with the
``cdc_topic_formats`` var (:func:`build_vars`), as a user does who knows what writes to which
topics. :meth:`Source.current_state` is the true final state that
gold.cdc_current_state must equal.
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

FORMATS = ("debezium-json", "canal-json", "maxwell-json", "oms-json")
DATABASE = "bench"
TENANT = "bench_tenant"
BASE_MS = 1_700_000_000_000  # the simulated clock: change number ``pos`` happens at BASE_MS + pos
SCALE = 10  # balance is DECIMAL(30, 10)
REGIONS = 8  # oms-json tables are partitioned by region: the key is (id, region)
BINLOG_EVENTS_PER_FILE = 2_000_000  # ~1 GB binlog files of ~500-byte events: positions roll over
OMS_HEARTBEAT_EVERY = 500  # one OMS HEARTBEAT per this many oms-json changes (~2 s of the clock)

#: (format, topic, Kafka key, Kafka value, Kafka timestamp ms); a None value is a tombstone.
Record = tuple[str, str, str | None, str | None, int]
#: A live row: (id, balance as the unscaled integer of DECIMAL(30, 10), name as JSON text, version).
Row = tuple[int, int, str, int]


def _names(rng: random.Random) -> list[str]:
    """Customer names as JSON text: mostly plain, some that JSON and Spark must keep exactly."""
    odd = ["Zoë Ångström", "北京市朝阳区", "O'Brien", 'say "hi"', "back\\slash", "tab\there",
           "line\nbreak", "emoji 😀 ok", "null", "12345", "-0.5", "e\u0301", "\u0001ctrl", ""]
    plain = ["customer %d" % rng.randint(0, 10**6) for _ in range(400)]
    return [json.dumps(n, ensure_ascii=False) for n in plain + odd] + ["null"] * 8


def _plain(unscaled: int) -> str:
    """DECIMAL(30, 10) as MySQL prints it: every one of the ten fraction digits."""
    digits = "%011d" % abs(unscaled)
    return "%s%s.%s" % ("-" if unscaled < 0 else "", digits[:-SCALE], digits[-SCALE:])


def _big_decimal(unscaled: int) -> str:
    """java.math.BigDecimal.toString() of unscaled * 10^-10, as OMS writes DECIMAL: scientific
    notation when the adjusted exponent is below -6 (0E-10, 1.23E-8), plain otherwise."""
    digits = str(abs(unscaled))
    adjusted = len(digits) - 1 - SCALE
    if adjusted >= -6:
        return _plain(unscaled)
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return "%s%sE%d" % ("-" if unscaled < 0 else "", mantissa, adjusted)


# --- debezium-json -------------------------------------------------------------------------

def _debezium_row(row: Row | None) -> str:
    if row is None:
        return "null"
    return '{"id":%d,"balance":%s,"name":%s,"version":%d}' % (row[0], _plain(row[1]), row[2], row[3])


def _debezium(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[str, str]:
    ms = BASE_MS + pos
    src = ('{"version":"2.5.0.Final","connector":"mysql","name":"bench","ts_ms":%d,"snapshot":"false",'
           '"db":"%s","sequence":null,"table":"%s","server_id":1,"gtid":null,"file":"mysql-bin.%06d",'
           '"pos":%d,"row":0,"thread":%d,"query":null}'
           % (ms - ms % 1000, DATABASE, table.name, 1 + pos // BINLOG_EVENTS_PER_FILE,
              4 + pos % BINLOG_EVENTS_PER_FILE * 500, 10 + table.index))
    value = '{"before":%s,"after":%s,"source":%s,"op":"%s","ts_ms":%d,"transaction":null}' % (
        _debezium_row(before), _debezium_row(after), src, op, ms + 15)
    return '{"id":%d}' % (after or before)[0], value


# --- canal-json ----------------------------------------------------------------------------

def _canal_value(token: str) -> str:
    """Canal writes every value as a JSON string (null stays null)."""
    return token if token == "null" or token.startswith('"') else '"%s"' % token


def _canal_row(row: Row) -> str:
    return '{"id":"%d","balance":"%s","name":%s,"version":"%d"}' % (row[0], _plain(row[1]), row[2], row[3])


def _canal(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    ms = BASE_MS + pos
    kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
    old = "null"
    if op == "u":
        old = "[{%s}]" % ",".join(
            '"%s":%s' % (col, _canal_value(v)) for col, v in _changed(before, after, _plain))
    value = ('{"data":[%s],"database":"%s","es":%d,"gtid":"","id":%d,"isDdl":false,'
             '"mysqlType":{"id":"bigint(20)","balance":"decimal(30,10)","name":"varchar(64)","version":"int(11)"},'
             '"old":%s,"pkNames":["id"],"sql":"","sqlType":{"id":-5,"balance":3,"name":12,"version":4},'
             '"table":"%s","ts":%d,"type":"%s"}'
             % (_canal_row(after or before), DATABASE, ms, 1 + pos // 64, old, table.name, ms + 20, kind))
    return None, value


def _changed(before: Row, after: Row, decimal: Callable[[int], str]) -> list[tuple[str, str]]:
    """The columns an UPDATE changed, with their old values as JSON tokens."""
    out = []
    if before[1] != after[1]:
        out.append(("balance", decimal(before[1])))
    if before[2] != after[2]:
        out.append(("name", before[2]))
    if before[3] != after[3]:
        out.append(("version", str(before[3])))
    return out


# --- maxwell-json --------------------------------------------------------------------------

def _maxwell_row(row: Row) -> str:
    return '{"id":%d,"balance":%s,"name":%s,"version":%d}' % (row[0], _plain(row[1]), row[2], row[3])


def _maxwell(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[str, str]:
    kind = {"c": "insert", "u": "update", "d": "delete"}[op]
    row = after or before
    old = ""
    if op == "u":
        old = ',"old":{%s}' % ",".join('"%s":%s' % pair for pair in _changed(before, after, _plain))
    value = ('{"database":"%s","table":"%s","type":"%s","ts":%d,"xid":%d,"commit":true,'
             '"position":"mysql-bin.%06d:%d","server_id":1,"thread_id":%d,"primary_key_columns":["id"],'
             '"data":%s%s}'
             % (DATABASE, table.name, kind, (BASE_MS + pos) // 1000, 9_000_000 + pos,
                1 + pos // BINLOG_EVENTS_PER_FILE, 4 + pos % BINLOG_EVENTS_PER_FILE * 500,
                10 + table.index, _maxwell_row(row), old))
    return '{"database":"%s","table":"%s","pk.id":%d}' % (DATABASE, table.name, row[0]), value


# --- oms-json ------------------------------------------------------------------------------

def _oms_row(row: Row | None) -> str:
    if row is None:
        return "null"
    return '{"id":%d,"region":%d,"balance":%s,"name":%s,"version":%d}' % (
        row[0], row[0] % REGIONS, _big_decimal(row[1]), row[2], row[3])


def _oms_sequence(pos: int) -> tuple[int, str]:
    """(timestamp seconds, storeDataSequence = {seconds}{increment, five digits})."""
    seconds = (BASE_MS + pos) // 1000
    return seconds, "%d%05d" % (seconds, (BASE_MS + pos) % 1000)


def _oms(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
    row = after or before
    seconds, sequence = _oms_sequence(pos)
    meta = ('{"checkpoint":"%d","record_primary_key":"id\\u0001region","source_identity":null,'
            '"uniqueId":"{tid:%d, partition_id:%d, part_cnt:0},%d,0,0","transId":"1002_%d","clusterId":"1",'
            '"record_primary_value":"%d\\u0001%d","dbType":"OB_MYSQL","storeDataSequence":%s,'
            '"table_name":"%s","db":"%s.%s","timestamp":"%d"}'
            % (seconds - 3, 500_000 + table.index, row[0] % REGIONS, pos, 7_000_000 + pos,
               row[0], row[0] % REGIONS, sequence, table.name, TENANT, DATABASE, seconds))
    value = '{"allMetaData":%s,"prevStruct":%s,"recordType":"%s","postStruct":%s}' % (
        meta, _oms_row(before), kind, _oms_row(after))
    return None, value


def _oms_heartbeat(pos: int) -> str:
    seconds, _ = _oms_sequence(pos)
    return ('{"allMetaData":{"checkpoint":"%d","dbType":"OB_MYSQL","storeDataSequence":null,"db":null,'
            '"timestamp":"%d","table_name":null},"prevStruct":null,"recordType":"HEARTBEAT","postStruct":null}'
            % (seconds, seconds))


_RENDER = {"debezium-json": _debezium, "canal-json": _canal, "maxwell-json": _maxwell, "oms-json": _oms}
_IMAGE = {"debezium-json": _debezium_row, "canal-json": _canal_row, "maxwell-json": _maxwell_row,
          "oms-json": _oms_row}


class _Table:
    """One source table: its live rows in a stable order (hot rows keep their rank)."""

    __slots__ = ("index", "name", "fmt", "topic", "rows", "next_id", "changes")

    def __init__(self, index: int, fmt: str) -> None:
        self.index, self.fmt, self.name = index, fmt, "t%03d" % index
        self.topic = "bench.%s.%s" % (fmt, self.name)
        self.rows: list[Row] = []
        self.next_id = 1
        self.changes = 0


class Source:
    """The simulated source databases: ``changes(n)`` makes n more changes, in production order.

    Deterministic for a given (tables, seed): the same calls give the same records. Successive
    ``changes`` calls continue one history (positions, clocks and rows), as an increment after
    a first load does.
    """

    def __init__(self, tables: int = 50, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        self.tables = [_Table(t, FORMATS[t % len(FORMATS)]) for t in range(tables)]
        # Zipf-like table skew by groups of len(FORMATS) tables, so every format gets a like share
        weights = [1.0 / (1 + t // len(FORMATS)) for t in range(tables)]
        self._cumulative = [sum(weights[: t + 1]) for t in range(tables)]
        self._names = _names(self.rng)
        self.pos = 0
        self.oms_changes = 0

    def _balance(self) -> int:
        roll = self.rng.random()
        if roll < 0.01:
            return 0
        if roll < 0.02:
            return self.rng.randint(1, 999)  # 0.0000000001 .. 0.0000000999
        value = self.rng.getrandbits(73) % 10**22  # 12 integer and 10 fraction digits
        return -value if roll < 0.04 else value

    def changes(self, total: int) -> Iterator[Record]:
        """Records of ``total`` more changes (plus the tombstones and heartbeats they bring)."""
        rng, tables, cumulative, names = self.rng, self.tables, self._cumulative, self._names
        top = cumulative[-1]
        for _ in range(total):
            table = tables[bisect.bisect_right(cumulative, rng.random() * top)]
            rows = table.rows
            n = len(rows)
            roll = rng.random()
            self.pos += 1
            table.changes += 1
            if n == 0 or roll < 0.2:
                after = (table.next_id, self._balance(), names[rng.randrange(len(names))], 0)
                table.next_id += 1
                rows.append(after)
                op, before = "c", None
            else:
                # log-uniform rank (Zipf with exponent 1): rank r is picked about 1/r as often
                i = int((n + 1) ** rng.random()) - 1
                if i >= n:
                    i = n - 1
                before = rows[i]
                if roll < 0.9:
                    name = names[rng.randrange(len(names))] if roll > 0.85 else before[2]
                    after = (before[0], self._balance(), name, before[3] + 1)
                    rows[i] = after
                    op = "u"
                else:
                    last = rows.pop()
                    if i < n - 1:
                        rows[i] = last
                    op, after = "d", None
            key, value = _RENDER[table.fmt](table, op, before, after, self.pos)
            produced = BASE_MS + self.pos + 40  # the tool publishes a few ms after the commit
            yield table.fmt, table.topic, key, value, produced
            if op == "d" and table.fmt == "debezium-json":
                yield table.fmt, table.topic, key, None, produced  # the tombstone (tombstones.on.delete)
            if table.fmt == "oms-json":
                self.oms_changes += 1
                if self.oms_changes % OMS_HEARTBEAT_EVERY == 0:
                    yield table.fmt, table.topic, None, _oms_heartbeat(self.pos), produced

    def live_counts(self) -> dict[str, int]:
        """Live rows per source table now (tables never touched have none and are left out)."""
        return {t.name: len(t.rows) for t in self.tables if t.rows}

    def current_state(self) -> dict[str, dict[str, str]]:
        """The true current state: table -> {key JSON: row JSON as the table's format writes it}.

        Keys are JSON objects of the key columns with their values as text (``{"id": "7"}``;
        oms-json: ``{"id": "7", "region": "7"}``), independent of how a vendor types them.
        """
        state: dict[str, dict[str, str]] = {}
        for t in self.tables:
            image = _IMAGE[t.fmt]
            rows = state.setdefault(t.name, {}) if t.rows else {}
            for row in t.rows:
                pk = {"id": str(row[0])}
                if t.fmt == "oms-json":
                    pk["region"] = str(row[0] % REGIONS)
                rows[json.dumps(pk, sort_keys=True)] = image(row)
        return state

    def formats(self) -> dict[str, str]:
        """Source table -> its format."""
        return {t.name: t.fmt for t in self.tables}


def topic_formats() -> dict[str, str]:
    """The topic pattern -> format id of every generated format, as the `cdc_topic_formats` var
    takes it: a dump of several topics lands in one ingest, and the build learns each topic's
    format from its name (canal-json's shape is shared with Huawei DRS, so it is not detected)."""
    return {"^bench(-follow)?[.]%s[.]" % fmt: fmt for fmt in FORMATS}


#: The topics' first part for the increments a following loader lands from the local broker
#: (bench/run.py): Kafka numbers a new topic's records from 0, and bronze already holds offsets
#: from 0 of the file dumps' topics, so they would be skipped as already landed.
FOLLOW_PREFIX = "bench-follow"


def build_vars() -> str:
    """``--vars`` for ``lakehouse build`` / ``dbt test`` over a generated history."""
    return json.dumps({"cdc_topic_formats": topic_formats()})


def write_kcat(out: Path, records: Iterator[Record], offsets: dict[str, int], prefix: str = "bench") -> dict[str, int]:
    """Write kcat -J lines of every topic to ``out``, as ``kcat -C -J`` of all topics prints them,
    offsets continuing from ``offsets`` (updated); returns the records written per format.
    ``prefix`` replaces the topics' first part (FOLLOW_PREFIX); the messages are the same."""
    counts = dict.fromkeys(FORMATS, 0)
    out.parent.mkdir(parents=True, exist_ok=True)
    dumps = json.encoder.encode_basestring  # what json.dumps(str, ensure_ascii=False) calls, minus its overhead
    with out.open("w", encoding="utf-8") as file:
        for fmt, topic, key, value, ts in records:
            if prefix != "bench":
                topic = prefix + topic[len("bench"):]
            offset = offsets.get(topic, 0)
            offsets[topic] = offset + 1
            counts[fmt] += 1
            file.write('{"topic":"%s","partition":0,"offset":%d,"tstype":"create","ts":%d,'
                       '"key":%s,"payload":%s}\n'
                       % (topic, offset, ts, "null" if key is None else dumps(key),
                          "null" if value is None else dumps(value)))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes to generate (default 1,000,000)")
    parser.add_argument("--tables", type=int, default=50, help="source tables (default 50)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench/out/changes.jsonl"),
                        help="output path: one kcat -J dump of every topic")
    args = parser.parse_args()
    started = time.monotonic()
    source = Source(args.tables, args.seed)
    counts = write_kcat(args.out, source.changes(args.changes), {})
    seconds = time.monotonic() - started
    print("%d changes, %d records in %.1fs; live rows: %d"
          % (args.changes, sum(counts.values()), seconds, sum(source.live_counts().values())))
    for fmt, count in counts.items():
        print("  %8d records  %s" % (count, fmt))
    print("lakehouse ingest --from-file %s; lakehouse build --vars '%s'" % (args.out, build_vars()))


if __name__ == "__main__":
    main()
