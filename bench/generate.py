"""Synthetic CDC topics for the benchmark: N changes over many tables, skewed keys, 15 vendor formats.

The generator simulates the source databases and writes what the CDC tools would publish for
their changes, each in its own format as the real tool writes it. The standing benchmark uses
four of them (``FORMATS``):

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

``ALL_FORMATS`` adds the eleven others the project parses (shared/formats/ has their documents):

* ``dataworks``: DataWorks real-time sync from MySQL: schema.dataColumn with DataWorks' six types
  (DECIMAL as a JSON string under type DOUBLE, as real messages carry it), primaryKey, payload
  before / after ``{"dataColumn": ..}``, sequenceId {task start ms}{six-digit counter}, an
  update as two records sharing a sequenceId (op ``UPDATE_BEFOR`` - the vendor's spelling - then
  ``UPDATE_AFTER``, the default when "one Kafka record per update" is not selected); an
  ``MHEARTBEAT`` record now and then;
* ``drs-json`` / ``drs-json-c``: Huawei DRS from MySQL: the canal shape with DRS's monotonic
  ``id``, every value a string with Gson's HTML-safe escapes (``'`` as ``\\u0027``), ``old``
  the whole row before an UPDATE; a DELETE's row in ``old`` (JSON) or in ``data`` (JSON-C, whose
  ``es`` / ``ts`` are strings);
* ``cloudcanal-json``: CloudCanal's own JSON: ``action``, ``data`` / ``before`` (the whole row
  before an UPDATE, ``[]`` otherwise), ``db`` / ``schema``, ``pks``, ``dbValType`` / ``jdbcType``,
  ``execTs`` / ``bid`` / ``sendTs``, entryType ROWDATA; every value a string;
* ``debezium-flat``: OMS DebeziumFlatten (the Debezium payload without schema / payload):
  source {connector OB_MYSQL, name OMS, pos "<increment>@<seconds>"}, an insert without
  ``before`` and a delete without ``after``; OMS's Debezium types: integers as JSON numbers,
  DECIMAL as a string (BigDecimal.toString()); the key ``{"id": ..}`` in the Kafka record key;
* ``debezium-smt``: OMS DebeziumSmt: the after-image fields plus ``"__deleted": "false"`` (a
  delete: the row as it was and ``"true"``), the key ``{"id": ..}`` in the Kafka record key; the
  table comes from the topic name as Debezium's <server>.<database>.<table>, so the build sees
  these tables in the database named by the topic's middle part (``debezium-smt``);
* ``dataworks-v2``: OMS DataWorks 2.0 from an OceanBase MySQL tenant: schema.source / column /
  pk, payload.before.data / payload.after.data, one UPDATE record with both images, scn
  ``"null"`` as the document's OB MySQL examples send it (order is the Kafka offset), DECIMAL
  as an exact JSON number (BigDecimal.toString()); a ``HEARTBEAT`` record now and then;
* ``shareplex-json``: OMS SharePlex: ``data`` the whole row of an ins / del but ONLY the changed
  columns of an upd, whose ``key`` holds the whole row before it; the tables are partitioned
  like oms-json's, so ``meta.rowid`` is {database}.{table}-{id}\\u0001{region} and the key the
  build gives a row is ``{"rowid": "<id><region>"}`` (the separators dropped); meta.scn
  {seconds}{five-digit increment}; DECIMAL as an exact JSON number;
* ``oms-avro-json``: OMS Avro as JSON: positional ``beforeImages`` / ``afterImages`` against
  ``fields`` (dataTypeNumber 8 / 246 / 15 / 3), integers ``{"precision": 8, "value": "7"}``,
  DECIMAL ``{"value": "<BigDecimal.toString()>", "precision", "scale": 10}``, text as Avro JSON
  bytes ``{"charset": "utf8mb4", "value": {"bytes": ..}}`` (one character per UTF-8 byte),
  tags.pk_uk_info, sourcePosition (a checkpoint, seconds) then ``id`` {ms}{five digits}: gold
  holds every value as a string;
* ``ogg-json``: Oracle GoldenGate's JSON formatter over an Oracle source: upper-case names
  (table ``BENCH.T013``, columns ``ID``, ``BALANCE``, ...), ``primary_keys`` included, NUMBER as
  an exact JSON number, compressed updates (``after`` holds the key and the changed columns,
  ``before`` the whole row), ``pos`` a 20-digit trail position; Oracle stores an empty string as
  NULL, so a name '' is null in these tables;
* ``aws-dms-json``: AWS DMS Kafka target from MySQL: ``data`` + ``metadata`` (microsecond
  timestamp, record-type data, operation insert / update / delete, schema-name, table-name,
  transaction-id), BeforeImageSettings on (an update's ``before-image`` is the whole row), a
  delete's row in ``data``; NUMERIC as a JSON string, integers as numbers. DMS names no key
  columns, so these tables are multisets: gold's key is the whole row.

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
topics. :meth:`Source.current_state` is the true final state that gold.cdc_current_state must
equal.
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import functools
import json
import random
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

FORMATS = ("debezium-json", "canal-json", "maxwell-json", "oms-json")
ALL_FORMATS = ("dataworks", "drs-json", "drs-json-c", "cloudcanal-json", "canal-json", "debezium-json",
               "debezium-flat", "debezium-smt", "oms-json", "dataworks-v2", "shareplex-json", "oms-avro-json",
               "maxwell-json", "ogg-json", "aws-dms-json")
DATABASE = "bench"
TENANT = "bench_tenant"
BASE_MS = 1_700_000_000_000  # the simulated clock: change number ``pos`` happens at BASE_MS + pos
SCALE = 10  # balance is DECIMAL(30, 10)
REGIONS = 8  # oms-json and shareplex-json tables are partitioned by region: the key is (id, region)
BINLOG_EVENTS_PER_FILE = 2_000_000  # ~1 GB binlog files of ~500-byte events: positions roll over
OMS_HEARTBEAT_EVERY = 500  # one heartbeat per this many changes of a format that has them (~2 s of the clock)

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


_EPOCH = datetime.datetime(1970, 1, 1)


def _utc(ms: int, sep: str = " ") -> str:
    """Epoch milliseconds as UTC date-time text with microseconds: 2023-11-14 22:13:20.123000."""
    t = _EPOCH + datetime.timedelta(milliseconds=ms)
    return "%04d-%02d-%02d%s%02d:%02d:%02d.%06d" % (
        t.year, t.month, t.day, sep, t.hour, t.minute, t.second, t.microsecond)


def _seconds_text(ms: int) -> str:
    """Epoch milliseconds as UTC date-time text to the second: 2023-11-14T22:13:20."""
    return _utc(ms, "T")[:19]


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


# --- the other formats: shared pieces -------------------------------------------------------

def _changed_columns(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The columns whose JSON token differs between two images (after's tokens)."""
    return {col: token for col, token in after.items() if before.get(col) != token}


def _row_object(columns: dict[str, str]) -> str:
    """A JSON object of column -> JSON token, in the columns' order."""
    return "{%s}" % ",".join('"%s":%s' % pair for pair in columns.items())


def _string_row(row: Row, decimal: Callable[[int], str], name: str | None = None) -> str:
    """id and version as JSON numbers, balance as a JSON string (the vendors that type DECIMAL
    as a string), name as given."""
    return '{"id":%d,"balance":"%s","name":%s,"version":%d}' % (
        row[0], decimal(row[1]), row[2] if name is None else name, row[3])


# --- dataworks -----------------------------------------------------------------------------

_DATAWORKS_SCHEMA = ('{"dataColumn":[{"name":"id","type":"LONG"},{"name":"balance","type":"DOUBLE"},'
                     '{"name":"name","type":"STRING"},{"name":"version","type":"LONG"}],"primaryKey":["id"],'
                     '"source":{"dbType":"MySQL","dbVersion":"8.0.28","dbName":"%s","schemaName":null,'
                     '"tableName":"%s"}}')


def _dataworks_row(row: Row) -> str:
    """dataColumn: LONG as a JSON number, DECIMAL as a JSON string under type DOUBLE (SPEC)."""
    return _string_row(row, _plain)


def _dataworks(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> list[tuple[None, str]]:
    ms = BASE_MS + pos
    event = ms - ms % 1000  # binlog event times are whole seconds
    schema = _DATAWORKS_SCHEMA % (DATABASE, table.name)
    sequence = BASE_MS * 1_000_000 + pos  # {task start ms}{six-digit counter}

    def message(kind: str, old: Row | None, new: Row | None) -> tuple[None, str]:
        return None, ('{"schema":%s,"payload":{"before":%s,"after":%s,"sequenceId":"%d",'
                      '"timestamp":{"eventTime":%d,"systemTime":%d,"checkpointTime":%d},"op":"%s","ddl":null},'
                      '"version":"0.0.1"}'
                      % (schema, "null" if old is None else '{"dataColumn":%s}' % _dataworks_row(old),
                         "null" if new is None else '{"dataColumn":%s}' % _dataworks_row(new),
                         sequence, event, ms + 30, event, kind))

    if op == "c":
        return [message("INSERT", None, after)]
    if op == "d":
        return [message("DELETE", before, None)]
    # an update is two records sharing the sequenceId: the before half, then the after half
    return [message("UPDATE_BEFOR", before, None), message("UPDATE_AFTER", None, after)]


def _dataworks_heartbeat(pos: int) -> str:
    ms = BASE_MS + pos
    return ('{"schema":{"dataColumn":null,"primaryKey":null,"source":null},"payload":{"before":null,'
            '"after":null,"sequenceId":null,"timestamp":{"eventTime":%d,"checkpointTime":%d},'
            '"op":"MHEARTBEAT","ddl":null},"version":"0.0.1"}' % (ms, ms))


# --- drs-json, drs-json-c ------------------------------------------------------------------

#: Gson's HTML-safe escapes, as DRS writes strings (its document's table, `<` corrected: SPEC)
_DRS_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("=", "\\u003d"), ("'", "\\u0027"))


@functools.cache
def _drs_text(token: str) -> str:
    for char, escape in _DRS_ESCAPES:
        token = token.replace(char, escape)
    return token


def _drs_row(row: Row) -> str:
    return '{"id":"%d","balance":"%s","name":%s,"version":"%d"}' % (
        row[0], _plain(row[1]), _drs_text(row[2]), row[3])


def _drs(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    ms = BASE_MS + pos
    kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
    json_c = table.fmt == "drs-json-c"
    if op == "c":
        data, old = "[%s]" % _drs_row(after), "null"
    elif op == "u":  # old: the row before the update, whole
        data, old = "[%s]" % _drs_row(after), "[%s]" % _drs_row(before)
    elif json_c:  # JSON-C: the deleted row in data
        data, old = "[%s]" % _drs_row(before), "null"
    else:  # JSON: the deleted row in old
        data, old = "null", "[%s]" % _drs_row(before)
    times = ('"%d"', '"%d"') if json_c else ("%d", "%d")
    value = ('{"mysqlType":{"id":"bigint","balance":"decimal","name":"varchar","version":"int"},"id":%d,'
             '"es":' + times[0] + ',"ts":' + times[1] + ',"database":"%s","table":"%s","type":"%s","isDdl":false,'
             '"sql":"","sqlType":{"id":-5,"balance":3,"name":12,"version":4},"data":%s,"old":%s,"pkNames":["id"]}'
             ) % (pos, ms, ms + 45, DATABASE, table.name, kind, data, old)
    return None, value


# --- cloudcanal-json -----------------------------------------------------------------------

def _cloudcanal(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    ms = BASE_MS + pos
    kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
    old = "[%s]" % _canal_row(before) if op == "u" else "[]"
    value = ('{"action":"%s","before":%s,"bid":%d,"data":[%s],"db":"%s",'
             '"dbValType":{"id":"bigint(20)","balance":"decimal(30,10)","name":"varchar(64)","version":"int(11)"},'
             '"isDdl":false,"entryType":"ROWDATA","execTs":%d,"jdbcType":{"id":-5,"balance":3,"name":12,"version":4},'
             '"pks":["id"],"schema":"%s","sendTs":%d,"sql":"","table":"%s"}'
             % (kind, old, pos // 64, _canal_row(after or before), DATABASE, ms, DATABASE, ms + 25, table.name))
    return None, value


# --- debezium-flat, debezium-smt (OMS) -----------------------------------------------------

def _oms_debezium_row(row: Row) -> str:
    """OMS's Debezium types: integers as JSON numbers, DECIMAL as a string."""
    return _string_row(row, _big_decimal)


def _debezium_flat(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[str, str]:
    ms = BASE_MS + pos
    seconds = ms // 1000
    src = ('{"version":"","connector":"OB_MYSQL","name":"OMS","ts_ms":%d,"db":"%s","table":"%s","pos":"%d@%d"}'
           % (seconds * 1000, DATABASE, table.name, ms % 1000, seconds))
    if op == "c":
        body = '"source":%s,"after":%s' % (src, _oms_debezium_row(after))
    elif op == "u":
        body = '"before":%s,"source":%s,"after":%s' % (_oms_debezium_row(before), src, _oms_debezium_row(after))
    else:
        body = '"before":%s,"source":%s' % (_oms_debezium_row(before), src)
    value = '{"op":"%s",%s,"ts_ms":%d}' % (op, body, ms + 35)
    return '{"id":%d}' % (after or before)[0], value


def _debezium_smt(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[str, str]:
    row = after or before
    value = '{"id":%d,"balance":"%s","name":%s,"version":%d,"__deleted":"%s"}' % (
        row[0], _big_decimal(row[1]), row[2], row[3], "true" if op == "d" else "false")
    return '{"id":%d}' % row[0], value


# --- dataworks-v2 (OMS) --------------------------------------------------------------------

def _dataworks_v2_row(row: Row) -> str:
    return '{"id":%d,"balance":%s,"name":%s,"version":%d}' % (row[0], _big_decimal(row[1]), row[2], row[3])


def _dataworks_v2(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    ms = BASE_MS + pos
    event = ms - ms % 1000
    kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
    value = ('{"version":"2.0","schema":{"source":{"dbType":"ob_mysql","dbVersion":null,"dbName":"%s","schema":null,'
             '"table":"%s"},"column":[{"name":"id","type":"BIGINT"},{"name":"balance","type":"DECIMAL"},'
             '{"name":"name","type":"VARCHAR"},{"name":"version","type":"INT"}],"pk":["id"]},'
             '"payload":{"before":%s,"after":%s,"op":"%s","timestamp":{"eventTime":%d,"systemTime":%d,'
             '"checkpointTime":%d},"ddl":null,"scn":"null"},"extend":{}}'
             % (DATABASE, table.name,
                "null" if before is None else '{"data":%s}' % _dataworks_v2_row(before),
                "null" if after is None else '{"data":%s}' % _dataworks_v2_row(after),
                kind, event, ms + 30, event // 1000 - 3))
    return None, value


def _dataworks_v2_heartbeat(pos: int) -> str:
    return '{"version":"2.0","payload":{"timestamp":{"eventTime":%d},"op":"HEARTBEAT"}}' % (BASE_MS + pos)


# --- shareplex-json (OMS) ------------------------------------------------------------------

def _shareplex_columns(row: Row) -> dict[str, str]:
    return {"id": str(row[0]), "region": str(row[0] % REGIONS), "balance": _big_decimal(row[1]),
            "name": row[2], "version": str(row[3])}


def _shareplex(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    ms = BASE_MS + pos
    row = after or before
    _, scn = _oms_sequence(pos)
    full = "%s.%s" % (DATABASE, table.name)
    key = ""
    if op == "u":  # data: only the changed columns; key: the whole row before the update
        data = _row_object(_changed_columns(_shareplex_columns(before), _shareplex_columns(after)))
        key = ',"key":%s' % _oms_row(before)
    else:
        data = _oms_row(row)
    meta = ('{"posttime":"%s","op":"%s","size":1,"time":"%s","idx":"1/1","seq":1,"table":"%s",'
            '"rowid":"%s-%d\\u0001%d","trans":"%d","scn":"%s"}'
            % (_seconds_text(ms + 1000), {"c": "ins", "u": "upd", "d": "del"}[op], _seconds_text(ms), full,
               full, row[0], row[0] % REGIONS, 7_000_000 + pos, scn))
    return None, '{"data":%s,"meta":%s%s}' % (data, meta, key)


# --- oms-avro-json (OMS) -------------------------------------------------------------------

@functools.cache
def _avro_text(token: str) -> str:
    """A name's Avro JSON image entry: null, or its UTF-8 bytes as Avro JSON bytes (one
    character per byte) with the column's charset."""
    text = json.loads(token)
    if text is None:
        return "null"
    chars = json.dumps(text.encode("utf-8").decode("latin-1"), ensure_ascii=False)
    return '{"charset":"utf8mb4","value":{"bytes":%s}}' % chars


def _avro_images(row: Row | None) -> str:
    if row is None:
        return "null"
    unscaled = row[1]
    return ('[{"precision":8,"value":"%d"},{"value":"%s","precision":%d,"scale":%d},%s,{"precision":8,"value":"%d"}]'
            % (row[0], _big_decimal(unscaled), len(str(abs(unscaled))), SCALE, _avro_text(row[2]), row[3]))


def _oms_avro_row(row: Row) -> str:
    """Gold's image of an oms-avro-json row: every value a string."""
    return '{"id":"%d","balance":"%s","name":%s,"version":"%d"}' % (row[0], _big_decimal(row[1]), row[2], row[3])


def _oms_avro(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    ms = BASE_MS + pos
    seconds = ms // 1000
    value = ('{"version":1,"id":%d,"sourceTimestamp":%d,"sourcePosition":"%d","safeSourcePosition":"%d",'
             '"sourceTxid":"","source":{"sourceType":"MySQL","version":"OBMySQL"},"operation":"%s",'
             '"objectName":"%s.%s","processTimestamps":[%d],"tags":{"pk_uk_info":"{\\"PRIMARY\\":[\\"id\\"]}"},'
             '"fields":[{"name":"id","dataTypeNumber":8},{"name":"balance","dataTypeNumber":246},'
             '{"name":"name","dataTypeNumber":15},{"name":"version","dataTypeNumber":3}],'
             '"beforeImages":%s,"afterImages":%s}'
             % ((ms + 40) * 100_000, seconds, seconds - 12, seconds - 12,
                {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op], DATABASE, table.name, ms + 40,
                _avro_images(before), _avro_images(after)))
    return None, value


# --- ogg-json ------------------------------------------------------------------------------

def _oracle_name(token: str) -> str:
    """Oracle stores an empty VARCHAR2 as NULL."""
    return "null" if token == '""' else token


def _ogg_columns(row: Row) -> dict[str, str]:
    return {"ID": str(row[0]), "BALANCE": _plain(row[1]), "NAME": _oracle_name(row[2]), "VERSION": str(row[3])}


def _ogg_row(row: Row) -> str:
    return '{"ID":%d,"BALANCE":%s,"NAME":%s,"VERSION":%d}' % (row[0], _plain(row[1]), _oracle_name(row[2]), row[3])


def _ogg(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[None, str]:
    ms = BASE_MS + pos
    if op == "c":
        images = '"after":%s' % _ogg_row(after)
    elif op == "u":  # compressed: after holds the key and the changed columns
        changed = _changed_columns(_ogg_columns(before), _ogg_columns(after))
        images = '"before":%s,"after":%s' % (_ogg_row(before), _row_object({"ID": str(after[0]), **changed}))
    else:
        images = '"before":%s' % _ogg_row(before)
    value = ('{"table":"%s.%s","op_type":"%s","op_ts":"%s","current_ts":"%s","pos":"%010d%010d",'
             '"primary_keys":["ID"],%s}'
             % (DATABASE.upper(), table.name, {"c": "I", "u": "U", "d": "D"}[op], _utc(ms), _utc(ms + 40, "T"),
                1 + pos // BINLOG_EVENTS_PER_FILE, 4 + pos % BINLOG_EVENTS_PER_FILE * 500, images))
    return None, value


# --- aws-dms-json --------------------------------------------------------------------------

def _dms_row(row: Row) -> str:
    """DMS's JSON: integers as numbers, NUMERIC as a string."""
    return _string_row(row, _plain)


def _aws_dms(table: _Table, op: str, before: Row | None, after: Row | None, pos: int) -> tuple[str, str]:
    ms = BASE_MS + pos
    kind = {"c": "insert", "u": "update", "d": "delete"}[op]
    before_image = ',"before-image":%s' % _dms_row(before) if op == "u" else ""
    value = ('{"data":%s%s,"metadata":{"timestamp":"%sZ","record-type":"data","operation":"%s",'
             '"partition-key-type":"schema-table","schema-name":"%s","table-name":"%s","transaction-id":%d}}'
             % (_dms_row(after or before), before_image, _utc(ms, "T"), kind, DATABASE, table.name,
                8_796_093_022_208 + pos))
    return "%s.%s" % (DATABASE, table.name), value


_RENDER: dict[str, Callable[..., tuple[str | None, str] | list[tuple[str | None, str]]]] = {
    "debezium-json": _debezium, "canal-json": _canal, "maxwell-json": _maxwell, "oms-json": _oms,
    "dataworks": _dataworks, "drs-json": _drs, "drs-json-c": _drs, "cloudcanal-json": _cloudcanal,
    "debezium-flat": _debezium_flat, "debezium-smt": _debezium_smt, "dataworks-v2": _dataworks_v2,
    "shareplex-json": _shareplex, "oms-avro-json": _oms_avro, "ogg-json": _ogg, "aws-dms-json": _aws_dms,
}
#: a row as gold.cdc_current_state's `row` holds it (values as the vendor sent them)
_IMAGE: dict[str, Callable[[Row], str]] = {
    "debezium-json": _debezium_row, "canal-json": _canal_row, "maxwell-json": _maxwell_row,
    "oms-json": _oms_row, "dataworks": _dataworks_row, "drs-json": _canal_row, "drs-json-c": _canal_row,
    "cloudcanal-json": _canal_row, "debezium-flat": _oms_debezium_row, "debezium-smt": _oms_debezium_row,
    "dataworks-v2": _dataworks_v2_row, "shareplex-json": _oms_row, "oms-avro-json": _oms_avro_row,
    "ogg-json": _ogg_row, "aws-dms-json": _dms_row,
}


def _key_id(row: Row, image: str) -> dict[str, str | None]:
    return {"id": str(row[0])}


def _key_id_region(row: Row, image: str) -> dict[str, str | None]:
    return {"id": str(row[0]), "region": str(row[0] % REGIONS)}


def _key_rowid(row: Row, image: str) -> dict[str, str | None]:
    # meta.rowid's key values, the \u0001 separators dropped (shareplex_json.sql)
    return {"rowid": "%d%d" % (row[0], row[0] % REGIONS)}


def _key_oracle(row: Row, image: str) -> dict[str, str | None]:
    return {"ID": str(row[0])}


def _key_whole_row(row: Row, image: str) -> dict[str, str | None]:
    # no key columns in the message: the table is a multiset, the whole row is its identity
    return json.loads(image, parse_int=str, parse_float=str)


#: a row's key as gold.cdc_current_state's `pk` holds it, values as text
_KEY: dict[str, Callable[[Row, str], dict[str, str | None]]] = {
    **dict.fromkeys(ALL_FORMATS, _key_id), "oms-json": _key_id_region, "shareplex-json": _key_rowid,
    "ogg-json": _key_oracle, "aws-dms-json": _key_whole_row,
}
#: the formats that write a heartbeat record now and then
_HEARTBEAT: dict[str, Callable[[int], str]] = {
    "oms-json": _oms_heartbeat, "dataworks": _dataworks_heartbeat, "dataworks-v2": _dataworks_v2_heartbeat,
}


class _Table:
    """One source table: its live rows in a stable order (hot rows keep their rank)."""

    __slots__ = ("index", "name", "fmt", "topic", "rows", "next_id", "changes")

    def __init__(self, index: int, fmt: str) -> None:
        # an Oracle source (ogg-json) names its tables in upper case
        self.index, self.fmt, self.name = index, fmt, ("T%03d" if fmt == "ogg-json" else "t%03d") % index
        self.topic = "bench.%s.t%03d" % (fmt, index)
        self.rows: list[Row] = []
        self.next_id = 1
        self.changes = 0


class _Changes:
    """The records of ``Source.changes``, an iterator that also says which formats the source
    writes (``formats``), so that :func:`write_kcat` counts them all, written or not."""

    __slots__ = ("_records", "formats")

    def __init__(self, records: Iterator[Record], formats: tuple[str, ...]) -> None:
        self._records, self.formats = records, formats

    def __iter__(self) -> Iterator[Record]:
        return self._records

    def __next__(self) -> Record:
        return next(self._records)


class Source:
    """The simulated source databases: ``changes(n)`` makes n more changes, in production order.

    Table t is written in format ``formats[t % len(formats)]``. Deterministic for a given
    (tables, seed, formats): the same calls give the same records, and with the default
    ``formats`` the very records of the standing benchmark. Successive ``changes`` calls
    continue one history (positions, clocks and rows), as an increment after a first load does.
    """

    def __init__(self, tables: int = 50, seed: int = 1, formats: Iterable[str] = FORMATS) -> None:
        formats = tuple(formats)
        unknown = [f for f in formats if f not in _RENDER]
        if not formats or unknown:
            raise ValueError("unknown or no formats: %s (known: %s)" % (unknown, ", ".join(ALL_FORMATS)))
        self.format_ids = formats
        self.rng = random.Random(seed)
        self.tables = [_Table(t, formats[t % len(formats)]) for t in range(tables)]
        # Zipf-like table skew by groups of len(formats) tables, so every format gets a like share
        weights = [1.0 / (1 + t // len(formats)) for t in range(tables)]
        self._cumulative = [sum(weights[: t + 1]) for t in range(tables)]
        self._names = _names(self.rng)
        self.pos = 0
        self._beats: dict[str, int] = {}

    @property
    def oms_changes(self) -> int:
        """oms-json changes so far (one HEARTBEAT per OMS_HEARTBEAT_EVERY of them)."""
        return self._beats.get("oms-json", 0)

    def _balance(self) -> int:
        roll = self.rng.random()
        if roll < 0.01:
            return 0
        if roll < 0.02:
            return self.rng.randint(1, 999)  # 0.0000000001 .. 0.0000000999
        value = self.rng.getrandbits(73) % 10**22  # 12 integer and 10 fraction digits
        return -value if roll < 0.04 else value

    def changes(self, total: int) -> _Changes:
        """Records of ``total`` more changes (plus the tombstones and heartbeats they bring)."""
        return _Changes(self._changes(total), self.format_ids)

    def _changes(self, total: int) -> Iterator[Record]:
        rng, tables, cumulative, names = self.rng, self.tables, self._cumulative, self._names
        top = cumulative[-1]
        beats = self._beats
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
            fmt = table.fmt
            rendered = _RENDER[fmt](table, op, before, after, self.pos)
            produced = BASE_MS + self.pos + 40  # the tool publishes a few ms after the commit
            if type(rendered) is tuple:
                key = rendered[0]
                yield fmt, table.topic, key, rendered[1], produced
            else:  # several records for one change (DataWorks' split update)
                for key, value in rendered:
                    yield fmt, table.topic, key, value, produced
            if op == "d" and fmt == "debezium-json":
                yield fmt, table.topic, key, None, produced  # the tombstone (tombstones.on.delete)
            beat = _HEARTBEAT.get(fmt)
            if beat is not None:
                count = beats[fmt] = beats.get(fmt, 0) + 1
                if count % OMS_HEARTBEAT_EVERY == 0:
                    yield fmt, table.topic, None, beat(self.pos), produced

    def live_counts(self) -> dict[str, int]:
        """Live rows per source table now (tables never touched have none and are left out)."""
        return {t.name: len(t.rows) for t in self.tables if t.rows}

    def current_state(self) -> dict[str, dict[str, str]]:
        """The true current state: table -> {key JSON: row JSON as gold.cdc_current_state's `row`
        holds it for the table's format}.

        Keys are JSON objects (``sort_keys``) of gold's key columns with their values as text
        (``{"id": "7"}``), independent of how a vendor types them: oms-json
        ``{"id": "7", "region": "7"}``; shareplex-json ``{"rowid": "77"}`` (meta.rowid's values
        without separators); ogg-json ``{"ID": "7"}``; aws-dms-json, whose messages name no key,
        the whole row (numbers as their text, NULL as null).
        """
        state: dict[str, dict[str, str]] = {}
        for t in self.tables:
            image, key = _IMAGE[t.fmt], _KEY[t.fmt]
            rows = state.setdefault(t.name, {}) if t.rows else {}
            for row in t.rows:
                text = image(row)
                rows[json.dumps(key(row, text), sort_keys=True)] = text
        return state

    def formats(self) -> dict[str, str]:
        """Source table -> its format."""
        return {t.name: t.fmt for t in self.tables}


def topic_formats(formats: Iterable[str] = FORMATS) -> dict[str, str]:
    """The topic pattern -> format id of every generated format, as the `cdc_topic_formats` var
    takes it: a dump of several topics lands in one ingest, and the build learns each topic's
    format from its name (canal-json's shape is shared with Huawei DRS, so it is not detected)."""
    return {"^bench(-follow)?[.]%s[.]" % fmt: fmt for fmt in formats}


#: The topics' first part for the increments a following loader lands from the local broker
#: (bench/run.py): Kafka numbers a new topic's records from 0, and bronze already holds offsets
#: from 0 of the file dumps' topics, so they would be skipped as already landed.
FOLLOW_PREFIX = "bench-follow"


def build_vars(formats: Iterable[str] = FORMATS) -> str:
    """``--vars`` for ``lakehouse build`` / ``dbt test`` over a generated history."""
    return json.dumps({"cdc_topic_formats": topic_formats(formats)})


def write_kcat(out: Path, records: Iterable[Record], offsets: dict[str, int], prefix: str = "bench") -> dict[str, int]:
    """Write kcat -J lines of every topic to ``out``, as ``kcat -C -J`` of all topics prints them,
    offsets continuing from ``offsets`` (updated); returns the records written per format: every
    format of the source (``Source.changes`` says which; the four FORMATS for other iterables),
    plus any other format written. ``prefix`` replaces the topics' first part (FOLLOW_PREFIX);
    the messages are the same."""
    counts = dict.fromkeys(getattr(records, "formats", FORMATS), 0)
    out.parent.mkdir(parents=True, exist_ok=True)
    dumps = json.encoder.encode_basestring  # what json.dumps(str, ensure_ascii=False) calls, minus its overhead
    with out.open("w", encoding="utf-8") as file:
        for fmt, topic, key, value, ts in records:
            if prefix != "bench":
                topic = prefix + topic[len("bench"):]
            offset = offsets.get(topic, 0)
            offsets[topic] = offset + 1
            try:
                counts[fmt] += 1
            except KeyError:
                counts[fmt] = 1
            file.write('{"topic":"%s","partition":0,"offset":%d,"tstype":"create","ts":%d,'
                       '"key":%s,"payload":%s}\n'
                       % (topic, offset, ts, "null" if key is None else dumps(key),
                          "null" if value is None else dumps(value)))
    return counts


def parse_formats(text: str) -> tuple[str, ...]:
    """``--formats``: comma-separated format ids, or ``all``."""
    if text.strip() == "all":
        return ALL_FORMATS
    formats = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    unknown = [f for f in formats if f not in ALL_FORMATS]
    if not formats or unknown:
        raise argparse.ArgumentTypeError("unknown format(s) %s; known: all, %s" % (unknown, ", ".join(ALL_FORMATS)))
    return formats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes to generate (default 1,000,000)")
    parser.add_argument("--tables", type=int, default=50, help="source tables (default 50)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--formats", type=parse_formats, default=FORMATS,
                        help="comma-separated format ids, or 'all' (default: %s)" % ",".join(FORMATS))
    parser.add_argument("--out", type=Path, default=Path("bench/out/changes.jsonl"),
                        help="output path: one kcat -J dump of every topic")
    args = parser.parse_args()
    started = time.monotonic()
    source = Source(args.tables, args.seed, args.formats)
    counts = write_kcat(args.out, source.changes(args.changes), {})
    seconds = time.monotonic() - started
    print("%d changes, %d records in %.1fs; live rows: %d"
          % (args.changes, sum(counts.values()), seconds, sum(source.live_counts().values())))
    for fmt, count in counts.items():
        print("  %8d records  %s" % (count, fmt))
    print("lakehouse ingest --from-file %s; lakehouse build --vars '%s'" % (args.out, build_vars(args.formats)))


if __name__ == "__main__":
    main()
