"""Typed gold views for every vendor type family: the Spark type of each column and the typed
value, digit for digit, byte for byte, against the source value.

One lakehouse for the module: one small table per format that carries type metadata (canal's
mysqlType / sqlType, DRS, CloudCanal's dbValType / jdbcType, DataWorks' six column types,
DataWorks 2.0, OMS ``__light_type``, OMS Avro dataTypeNumber / precision / scale / charset,
Debezium's Connect schema), a table and columns whose names need quoting, and a column typed by
a row of the ``cdc_column_type_overrides`` seed. Everything is landed first and built once.

Time zones (see macros/gold/cdc_typed_column.sql): the session time zone is UTC; a date-time
text without zone (canal, DRS and OMS DATETIME, ...) is the source's wall-clock time and reads
as that wall-clock; epoch values (DataWorks DATE in ms, DRS / OMS TIMESTAMP in seconds, Avro
Timestamp records) and texts with a zone are instants. The tests read timestamps as
timestamp_ntz in UTC, so they do not depend on the machine's time zone.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import struct
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from canal_messages import CanalTable
from canal_messages import dumps as canal_dumps
from cdc_messages import Raw, dumps, envelope
from conftest import PROJECT, InProcessLakehouse, copy_project
from oms_messages import OmsJsonTable

OVERRIDES = PROJECT / "seeds" / "cdc_column_type_overrides.csv"
#: the row a user would add to seeds/cdc_column_type_overrides.csv: DataWorks sends DECIMAL
#: under its type DOUBLE (as a JSON string), so only the user knows the column's precision
OVERRIDE_ROW = "typed_dataworks,events,amount,\"decimal(38,18)\"\n"

WIDE = "-12345678901234567890123456789012345.678901234567890123456789012345"  # 65 digits
LATIN1_BLOB = b"\x00\xff\x80\x7f\x00 canal"


def _utc(*args: int) -> dt.datetime:
    return dt.datetime(*args)


def _view_name(*parts: str) -> str:
    """gold view name of a source table (cdc_typed_view_name)."""
    return re.sub("[^a-z0-9_]", "_", "__".join(parts).lower())


# --- the source tables, one per format ------------------------------------------------------

CANAL_TYPES = {
    "id": ("bigint(20) unsigned", -5), "dec": ("decimal(30,10)", 3), "wide": ("decimal(65,30)", 3),
    "flag": ("tinyint(1)", -6), "uint": ("int(10) unsigned", 4), "big": ("bigint(20)", -5),
    "dt": ("datetime(6)", 93), "ts": ("timestamp", 93), "day": ("date", 91), "blob": ("blob", 2004),
    "vbin": ("varbinary(16)", -3), "dbl": ("double", 8), "txt": ("varchar(64)", 12), "nul": ("varchar(8)", 12),
}
CANAL_A = {
    "id": "18446744073709551615", "dec": "12345678901234567890.0123456789", "wide": WIDE, "flag": "1",
    "uint": "4294967295", "big": "-9223372036854775808", "dt": "2024-02-29 23:59:59.123456",
    "ts": "1999-12-31 23:59:59", "day": "1969-07-20", "blob": LATIN1_BLOB.decode("latin-1"),
    "vbin": b"\xde\xad\xbe\xef".decode("latin-1"), "dbl": "1.2510357E7",
    "txt": "CJK \u4e2d\u6587 \U0001F600 quote \" backslash \\", "nul": None,
}
CANAL_B = {
    "id": "1", "dec": "-0.0000000001", "wide": "0.000000000000000000000000000001", "flag": "0", "uint": "0",
    "big": "9223372036854775807", "dt": "1900-01-01 00:00:00", "ts": "1970-01-01 00:00:01", "day": "2038-01-19",
    "blob": "", "vbin": None, "dbl": "-0.5", "txt": "", "nul": "x",
}
CANAL_B2 = {**CANAL_B, "dec": "99999999999999999999.9999999999"}


def _canal() -> tuple[str, list[str]]:
    t = CanalTable("canal-json", "typed_canal", "all_types", ["id"], CANAL_TYPES, topic="typed.canal")
    t.insert(CANAL_A, CANAL_B)
    t.update((CANAL_B, CANAL_B2))
    return "canal-json", [envelope(t.topic, 0, i, k, v) for i, (k, v) in enumerate(t.messages)]


DRS_TYPES = {
    "id": ("int", 4), "c4": ("datetime", 93), "c5": ("timestamp", 93), "c7": ("float", 6), "c8": ("double", 8),
    "c9": ("decimal", 3), "c11": ("binary", -2), "c12": ("varbinary", -3), "c14": ("blob", 2004),
    "c13": ("text", -1),
}
DRS_ROW = {
    "id": "104", "c4": "2021-06-25 17:51:53", "c5": "1624614713.201", "c7": "10357.0", "c8": "1.2510357E7",
    "c9": "9874510357", "c11": "[]", "c12": "[106, 103, 111]", "c14": "[0, -1, 127, -128]",
    "c13": "escapes < > & = ' (DRS)",
}


def _drs() -> tuple[str, list[str]]:
    # the document's example table name ends in a space: names are kept as sent
    t = CanalTable("drs-json", "typed_drs", "test ", ["id"], DRS_TYPES, topic="typed.drs")
    t.insert(DRS_ROW)
    return "drs-json", [envelope(t.topic, 0, i, k, v) for i, (k, v) in enumerate(t.messages)]


def _cloudcanal() -> tuple[str, list[str]]:
    # dbValType names some columns; the others carry only their java.sql.Types code
    msg = {
        "action": "INSERT", "before": [], "bid": Raw("0"),
        "data": [{"id": "9223372036854775808", "amount": "-1234567890123456.7891",
                  "seen": "2023-11-14 22:13:20.5", "qty": "42", "price": "1.10", "label": "ten chars!"}],
        "db": "typed_cloudcanal", "schema": "typed_cloudcanal", "table": "orders",
        "dbValType": {"id": "bigint(20) unsigned", "amount": "decimal(20,4)", "label": "varchar(10)"},
        "jdbcType": {"id": Raw("-5"), "amount": Raw("3"), "seen": Raw("93"), "qty": Raw("4"),
                     "price": Raw("3"), "label": Raw("12")},
        "isDdl": Raw("false"), "entryType": "ROWDATA", "execTs": Raw("1669789152000"),
        "pks": ["id"], "sendTs": Raw("1669789153377"), "sql": "",
    }
    return "cloudcanal-json", [envelope("typed.cloudcanal", 0, 0, None, canal_dumps(msg))]


def _dataworks_message(row: dict[str, Any], sequence: str, event_time: int) -> str:
    types = {"id": "LONG", "amount": "DOUBLE", "ratio": "DOUBLE", "born": "DATE", "made": "DATE", "at": "DATE",
             "blob": "BYTES", "flag": "BOOLEAN", "note": "STRING"}
    return dumps({
        "schema": {"dataColumn": [{"name": c, "type": types[c]} for c in row], "primaryKey": ["id"],
                   "source": {"dbType": "MySQL", "dbName": "typed_dataworks", "tableName": "events"}},
        "payload": {"before": None, "after": {"dataColumn": row}, "sequenceId": sequence,
                    "timestamp": {"eventTime": event_time, "systemTime": event_time + 900,
                                  "checkpointTime": event_time},
                    "op": "INSERT", "ddl": None},
        "version": "0.0.1",
    })


DW_ROWS = [
    {"id": Raw("9223372036854775807"), "amount": "12345678901234567890.123456789012345678", "ratio": Raw("0.1"),
     "born": Raw("-86400000"), "made": Raw("-2208988800000"), "at": Raw("1620457896123"),
     "blob": base64.b64encode(b"\x00\xffDW").decode(), "flag": Raw("true"), "note": "\u4e2d\u6587"},
    {"id": Raw("-1"), "amount": "-0.000000000000000001", "ratio": Raw("1.5E300"), "born": Raw("0"),
     "made": None, "at": Raw("-1"), "blob": "", "flag": Raw("false"), "note": None},
]


def _dataworks() -> tuple[str, list[str]]:
    messages = [_dataworks_message(DW_ROWS[0], "-1", -1),  # a full-load row
                _dataworks_message(DW_ROWS[1], "1620457642589000001", 1620457896000)]
    return "dataworks", [envelope("typed.dataworks", 0, i, None, m) for i, m in enumerate(messages)]


DW2_TYPES = {"id": "INT64", "int8": "TINYINT", "bigInt": "BIGINT", "decimal": "DECIMAL", "bytes": "BLOB",
             "mydata": "binary", "localDate": "DATE", "localTime": "TIME", "localDateTime": "DATETIME",
             "timestamp": "TIMESTAMP", "zoned": "ZONED_DATETIME", "boolean": "BOOLEAN", "float64": "DOUBLE",
             "string": "VARCHAR"}
DW2_ROWS = [
    {"id": Raw("1"), "int8": Raw("-128"), "bigInt": Raw("10223372036854775806"),
     "decimal": Raw("0.0000000000000008125"),
     "bytes": "aGVsbG8gd29ybGQ=", "mydata": base64.b64encode(b"\x00\x01\xfe").decode(), "localDate": "2020-11-25",
     "localTime": "00:01:02", "localDateTime": "2020-11-25 00:01:02", "timestamp": "1606233662.012345",
     "zoned": "2020-11-25 00:01:02.012345 Asia/Shanghai", "boolean": Raw("1"), "float64": Raw("1.2222"),
     "string": "hello world"},
    {"id": Raw("2"), "int8": Raw("127"), "bigInt": Raw("-9223372036854775808"), "decimal": Raw("1.25E-10"),
     "bytes": "", "mydata": None, "localDate": "1969-12-31", "localTime": "23:59:59.999999",
     "localDateTime": "1900-01-01 00:00:00.5", "timestamp": Raw("1590315269000"),
     "zoned": "2020-11-25T00:01:02Z", "boolean": Raw("0"), "float64": Raw("-0.0"), "string": ""},
]


def _dataworks_v2() -> tuple[str, list[str]]:
    messages = []
    for i, row in enumerate(DW2_ROWS):
        messages.append(dumps({
            "version": "2.0",
            "schema": {"source": {"dbType": "ob_mysql", "dbVersion": None, "dbName": "typed_dw2", "schema": None,
                                  "table": "tab"},
                       "column": [{"name": c, "type": DW2_TYPES[c]} for c in row], "pk": ["id"]},
            "payload": {"before": None, "after": {"data": row}, "op": "INSERT",
                        "timestamp": {"eventTime": 1647581000000 + i, "systemTime": 1647581000795 + i,
                                      "checkpointTime": 1647581000},
                        "ddl": None, "scn": str(900000 + i)},
            "extend": {"load_fm": "test"},
        }))
    return "dataworks-v2", [envelope("typed.dw2", 0, i, None, m) for i, m in enumerate(messages)]


OMS_TYPES = {"id": "INT64", "int8": "TINYINT", "int16": "SMALLINT", "int32": "INT", "int64": "INT64",
             "bigInt": "BIGINT", "float32": "FLOAT", "float64": "DOUBLE", "decimal": "DECIMAL", "bytes": "BLOB",
             "localDate": "DATE", "localTime": "TIME", "localDateTime": "DATETIME", "timestamp_in_long": "TIMESTAMP",
             "string": "VARCHAR", "boolean": "BOOLEAN"}
OMS_ROW = {
    "id": Raw("3"), "int8": Raw("3"), "int16": Raw("129"), "int32": Raw("2147483646"),
    "int64": Raw("9223372036854775806"), "bigInt": Raw("10223372036854775806"), "float32": Raw("1.2222"),
    "float64": Raw("9.999999999999999"), "decimal": Raw("9." + "9" * 64), "bytes": "aGVsbG8gd29ybGQ=",
    "localDate": "2020-11-25", "localTime": "00:01:02", "localDateTime": "2020-11-25 00:01:02.012345678",
    "timestamp_in_long": "1606233662", "string": "hello world", "boolean": Raw("1"),
}


#: 1.2222 as a 32-bit float reads back
FLOAT32 = struct.unpack("f", struct.pack("f", 1.2222))[0]


def _oms_json() -> tuple[str, list[str]]:
    t = OmsJsonTable("tenant", "typed_oms", "lt", ["id"], light_types=OMS_TYPES)
    t.insert(OMS_ROW)
    return "oms-json", [envelope("typed.oms", 0, i, k, v) for i, (k, v) in enumerate(t.messages)]


def _latin1(data: bytes) -> str:
    return data.decode("latin-1")


#: name -> dataTypeNumber (MySQL's enum_field_types)
AVRO_FIELDS = {"id": 8, "qty": 3, "small": 2, "price": 246, "wide": 246, "ratio": 5, "name": 253, "vbin": 253,
               "blob": 252, "txt": 252, "ts": 7, "dt": 12, "day": 10, "yr": 13, "doc": 245}
AVRO_A = {
    "id": {"precision": 8, "value": "18446744073709551615"},
    "qty": {"precision": 8, "value": "4294967295"},
    "small": {"precision": 8, "value": "-32768"},
    "price": {"value": "12345678901234.5678", "precision": 20, "scale": 4},
    "wide": {"value": WIDE, "precision": 65, "scale": 30},
    "ratio": {"value": Raw("0.25"), "precision": 16, "scale": 64},
    "name": {"charset": "utf8mb4", "value": {"bytes": _latin1("CJK \u4e2d\u6587 \U0001F600".encode())}},
    "vbin": {"charset": "binary", "value": {"bytes": _latin1(b"\x00\xff\x80")}},
    "blob": {"type": "BLOB", "value": {"bytes": _latin1(b"\x01\x02\xff")}},
    "txt": {"charset": "utf8mb4", "value": {"bytes": _latin1("text \u00e9".encode())}},
    "ts": {"timestamp": Raw("1700000000"), "millis": Raw("123456")},
    "dt": {"year": Raw("2024"), "month": Raw("2"), "day": Raw("29"), "hour": Raw("23"), "minute": Raw("59"),
           "second": Raw("59"), "millis": Raw("123456")},
    "day": {"year": Raw("1969"), "month": Raw("7"), "day": Raw("20")},
    "yr": {"year": Raw("2024")},
    "doc": {"type": "JSON", "value": "{\"a\": [1, 2.50]}"},
}
#: the newest change: SQL NULLs, whose Avro entries carry no precision, scale or charset
AVRO_B = {"id": {"precision": 8, "value": "2"}, **{name: None for name in AVRO_FIELDS if name != "id"}}


def _oms_avro() -> tuple[str, list[str]]:
    messages = []
    for i, row in enumerate([AVRO_A, AVRO_B]):
        messages.append(dumps({
            "version": 1, "id": Raw(f"17023692214360000{i}"), "sourceTimestamp": 1702369092,
            "sourcePosition": str(1702369080 + i), "safeSourcePosition": str(1702369080 + i), "sourceTxid": "",
            "source": {"sourceType": "MySQL", "version": "OBMySQL"}, "operation": "INSERT",
            "objectName": "typed_avro.av", "processTimestamps": [1702369221480],
            "tags": {"pk_uk_info": json.dumps({"PRIMARY": ["id"]})},
            "fields": [{"name": n, "dataTypeNumber": number} for n, number in AVRO_FIELDS.items()],
            "beforeImages": None, "afterImages": [row[n] for n in AVRO_FIELDS],
        }))
    return "oms-avro-json", [envelope("typed.avro", 0, i, None, m) for i, m in enumerate(messages)]


ODD_TABLE = "Odd tab.le`'\"\u4e2d\u6587"
ODD_TYPES = {"sp ace": ("int(11)", 4), "do.t": ("decimal(5,2)", 3), "back`tick": ("varchar(8)", 12),
             "quo'te": ("varchar(8)", 12), "dq\"uote": ("datetime", 93), "\u4e2d\u6587\u5217": ("bigint(20)", -5),
             "back\\slash": ("date", 91)}
ODD_ROW = {"sp ace": "7", "do.t": "-999.99", "back`tick": "`", "quo'te": "'", "dq\"uote": "2001-02-03 04:05:06",
           "\u4e2d\u6587\u5217": "-42", "back\\slash": "2001-02-03"}


def _odd() -> tuple[str, list[str]]:
    t = CanalTable("canal-json", "typed_odd", ODD_TABLE, ["sp ace"], ODD_TYPES, topic="typed.odd")
    t.insert(ODD_ROW)
    return "canal-json", [envelope(t.topic, 0, i, k, v) for i, (k, v) in enumerate(t.messages)]


def _connect_decimal(unscaled: int) -> str:
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


DBZ_FIELDS = [
    {"field": "id", "type": "int64", "optional": False},
    {"field": "ubig", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "0", "connect.decimal.precision": "20"}},
    {"field": "wide", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "parameters": {"scale": "30", "connect.decimal.precision": "65"}},
    {"field": "vsd", "type": "struct", "optional": True, "name": "io.debezium.data.VariableScaleDecimal"},
    {"field": "ts", "type": "int64", "optional": True, "name": "io.debezium.time.Timestamp"},
    {"field": "zts", "type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp"},
]
DBZ_ROWS = [
    {"id": Raw("1"), "ubig": _connect_decimal(18446744073709551615),
     "wide": _connect_decimal(int(WIDE.replace(".", ""))),
     "vsd": {"scale": Raw("3"), "value": _connect_decimal(-123456789)}, "ts": Raw("-1"),
     "zts": "2024-02-29T23:59:59.123456Z"},
    {"id": Raw("2"), "ubig": _connect_decimal(0), "wide": _connect_decimal(10 ** 64 - 1),
     "vsd": {"scale": Raw("0"), "value": _connect_decimal(10 ** 40)}, "ts": Raw("1700000000123"),
     "zts": "1969-12-31T23:59:59Z"},
]


def _debezium() -> tuple[str, list[str]]:
    schema = {"type": "struct", "fields": [
        {"field": "before", "type": "struct", "fields": DBZ_FIELDS, "optional": True},
        {"field": "after", "type": "struct", "fields": DBZ_FIELDS, "optional": True},
        {"field": "source", "type": "struct", "fields": []}, {"field": "op", "type": "string"}]}
    lines = []
    for i, row in enumerate(DBZ_ROWS):
        payload = {"before": None, "after": row, "op": "c", "ts_ms": 1_700_000_000_000 + i,
                   "source": {"db": "typed_dbz", "table": "wide", "file": "binlog.000001", "pos": 100 + i,
                              "row": 0, "ts_ms": 1_700_000_000_000}}
        lines.append(envelope("typed.dbz.wide", 0, i, json.dumps({"id": i + 1}),
                              dumps({"schema": schema, "payload": payload})))
    return "debezium-json", lines


SOURCES = [_canal, _drs, _cloudcanal, _dataworks, _dataworks_v2, _oms_json, _oms_avro, _odd, _debezium]


# --- the module's lakehouse -------------------------------------------------------------------


@pytest.fixture(scope="module")
def typed_lake(_shared_lakehouse: InProcessLakehouse, tmp_path_factory: pytest.TempPathFactory,
               ) -> Iterator[InProcessLakehouse]:
    lake = _shared_lakehouse
    lake.reset()
    by_format: dict[str, list[str]] = {}
    for source in SOURCES:
        fmt, lines = source()
        by_format.setdefault(fmt, []).extend(lines)
    for fmt, lines in by_format.items():
        lake.ingest(lines, fmt=fmt)
    # the user's override row, in a copy of the project: the checkout's seed stays as shipped
    project = copy_project(tmp_path_factory.mktemp("typed") / "project")
    overrides = project / "seeds" / OVERRIDES.name
    shipped = overrides.read_text(encoding="utf-8")
    overrides.write_text(shipped + ("" if shipped.endswith("\n") else "\n") + OVERRIDE_ROW, encoding="utf-8")
    try:
        lake._seeded = False  # load the seeds (with the extra row) in this one build
        lake.build(project=project)
    finally:
        lake._seeded = False  # the next build of the session reloads the shipped seed
    yield lake


def _types(lake: InProcessLakehouse, view: str) -> dict[str, str]:
    return {r["col_name"]: r["data_type"] for r in lake.rows(f"describe gold.`{view}`")
            if r["col_name"] and not r["col_name"].startswith("#")}


def _rows(lake: InProcessLakehouse, view: str, key: str) -> dict[Any, dict[str, Any]]:
    """The view's rows by ``key``, timestamps as UTC wall-clock (timestamp_ntz: no local time zone)."""
    types = _types(lake, view)
    cols = ", ".join(
        f"cast(`{c.replace('`', '``')}` as timestamp_ntz) as `{c.replace('`', '``')}`" if t == "timestamp"
        else f"`{c.replace('`', '``')}`"
        for c, t in types.items() if not c.startswith("_cdc_")
    )
    return {r[key]: r for r in lake.rows(f"select {cols} from gold.`{view}`")}


def _check(lake: InProcessLakehouse, view: str, key: str, want_types: dict[str, str],
           want_rows: dict[Any, dict[str, Any]]) -> None:
    types = {c: t for c, t in _types(lake, view).items() if not c.startswith("_cdc_")}
    assert types == want_types
    rows = _rows(lake, view, key)
    assert set(rows) == set(want_rows)
    for k, want in want_rows.items():
        for column, value in want.items():
            got = rows[k][column]
            got = bytes(got) if isinstance(got, bytearray) else got
            assert got == value and type(got) is type(value), (view, k, column, got, value)


# --- the tests ------------------------------------------------------------------------------


def test_canal_mysql_types(typed_lake):
    _check(typed_lake, "typed_canal__all_types", "id", {
        "id": "decimal(20,0)", "dec": "decimal(30,10)", "wide": "string", "flag": "int", "uint": "bigint",
        "big": "bigint", "dt": "timestamp", "ts": "timestamp", "day": "date", "blob": "binary", "vbin": "binary",
        "dbl": "double", "txt": "string", "nul": "string",
    }, {
        Decimal("18446744073709551615"): {
            "dec": Decimal("12345678901234567890.0123456789"), "wide": WIDE, "flag": 1, "uint": 4294967295,
            "big": -9223372036854775808, "dt": _utc(2024, 2, 29, 23, 59, 59, 123456),
            "ts": _utc(1999, 12, 31, 23, 59, 59), "day": dt.date(1969, 7, 20), "blob": LATIN1_BLOB,
            "vbin": b"\xde\xad\xbe\xef", "dbl": 12510357.0, "txt": CANAL_A["txt"], "nul": None},
        Decimal("1"): {
            "dec": Decimal("99999999999999999999.9999999999"), "wide": "0.000000000000000000000000000001",
            "flag": 0, "uint": 0, "big": 9223372036854775807, "dt": _utc(1900, 1, 1), "ts": _utc(1970, 1, 1, 0, 0, 1),
            "day": dt.date(2038, 1, 19), "blob": b"", "vbin": None, "dbl": -0.5, "txt": "", "nul": "x"},
    })
    # the history view is typed the same way: key 1 had two versions
    history = typed_lake.rows("select dec, _cdc_is_current from gold.typed_canal__all_types__history "
                              "where id = 1 order by _cdc_valid_from, _cdc_is_current")
    assert [(r["dec"], r["_cdc_is_current"]) for r in history] == [
        (Decimal("-0.0000000001"), False), (Decimal("99999999999999999999.9999999999"), True)]


def test_drs_types(typed_lake):
    _check(typed_lake, _view_name("typed_drs", "test "), "id", {
        "id": "int", "c4": "timestamp", "c5": "timestamp", "c7": "float", "c8": "double", "c9": "string",
        "c11": "binary", "c12": "binary", "c14": "binary", "c13": "string",
    }, {104: {
        # datetime: the source's wall-clock; timestamp: epoch seconds (an instant, shown in UTC)
        "c4": _utc(2021, 6, 25, 17, 51, 53), "c5": _utc(2021, 6, 25, 9, 51, 53, 201000),
        "c7": 10357.0, "c8": 12510357.0, "c9": "9874510357",
        # Java's byte[] as DRS prints it: signed bytes in brackets
        "c11": b"", "c12": b"jgo", "c14": b"\x00\xff\x7f\x80", "c13": DRS_ROW["c13"],
    }})


def test_cloudcanal_types_from_names_and_jdbc_codes(typed_lake):
    _check(typed_lake, "typed_cloudcanal__typed_cloudcanal__orders", "id", {
        "id": "decimal(20,0)", "amount": "decimal(20,4)", "seen": "timestamp", "qty": "int", "price": "string",
        "label": "string",
    }, {Decimal("9223372036854775808"): {
        "amount": Decimal("-1234567890123456.7891"), "seen": _utc(2023, 11, 14, 22, 13, 20, 500000), "qty": 42,
        "price": "1.10", "label": "ten chars!"}})


def test_dataworks_types(typed_lake):
    _check(typed_lake, "typed_dataworks__events", "id", {
        # amount: set by the cdc_column_type_overrides row; ratio: DOUBLE stays exact text
        "id": "bigint", "amount": "decimal(38,18)", "ratio": "string", "born": "timestamp", "made": "timestamp",
        "at": "timestamp", "blob": "binary", "flag": "boolean", "note": "string",
    }, {
        9223372036854775807: {
            "amount": Decimal("12345678901234567890.123456789012345678"), "ratio": "0.1",
            "born": _utc(1969, 12, 31), "made": _utc(1900, 1, 1), "at": _utc(2021, 5, 8, 7, 11, 36, 123000),
            "blob": b"\x00\xffDW", "flag": True, "note": "\u4e2d\u6587"},
        -1: {"amount": Decimal("-0.000000000000000001"), "ratio": "1.5E300", "born": _utc(1970, 1, 1), "made": None,
             "at": _utc(1969, 12, 31, 23, 59, 59, 999000), "blob": b"", "flag": False, "note": None},
    })
    typed = typed_lake.rows("select column_name, spark_type, vendor_type from gold.cdc_typed_columns "
                            "where source_database = 'typed_dataworks' and column_name in ('amount', 'ratio')")
    assert {r["column_name"]: r["spark_type"] for r in typed} == {"amount": "decimal(38,18)", "ratio": "string"}
    # the row came from the copy: the checkout's seed is as shipped
    assert "typed_dataworks" not in OVERRIDES.read_text(encoding="utf-8")


def test_dataworks_v2_types(typed_lake):
    _check(typed_lake, "typed_dw2__tab", "id", {
        "id": "bigint", "int8": "int", "bigInt": "decimal(20,0)", "decimal": "string", "bytes": "binary",
        "mydata": "binary", "localDate": "date", "localTime": "string", "localDateTime": "timestamp",
        "timestamp": "timestamp", "zoned": "timestamp", "boolean": "boolean", "float64": "double", "string": "string",
    }, {
        1: {"int8": -128, "bigInt": Decimal("10223372036854775806"), "decimal": "0.0000000000000008125",
            "bytes": b"hello world", "mydata": b"\x00\x01\xfe", "localDate": dt.date(2020, 11, 25),
            "localTime": "00:01:02", "localDateTime": _utc(2020, 11, 25, 0, 1, 2),
            "timestamp": _utc(2020, 11, 24, 16, 1, 2, 12345), "zoned": _utc(2020, 11, 24, 16, 1, 2, 12345),
            "boolean": True, "float64": 1.2222, "string": "hello world"},
        2: {"int8": 127, "bigInt": Decimal("-9223372036854775808"), "decimal": "1.25E-10", "bytes": b"",
            "mydata": None, "localDate": dt.date(1969, 12, 31), "localTime": "23:59:59.999999",
            "localDateTime": _utc(1900, 1, 1, 0, 0, 0, 500000),
            # 13 digits: epoch milliseconds (the format's header example), not seconds
            "timestamp": _utc(2020, 5, 24, 10, 14, 29), "zoned": _utc(2020, 11, 25, 0, 1, 2),
            "boolean": False, "float64": -0.0, "string": ""},
    })


def test_oms_json_light_types(typed_lake):
    _check(typed_lake, "typed_oms__lt", "id", {
        "id": "bigint", "int8": "int", "int16": "int", "int32": "int", "int64": "bigint", "bigInt": "decimal(20,0)",
        "float32": "float", "float64": "double", "decimal": "string", "bytes": "binary", "localDate": "date",
        "localTime": "string", "localDateTime": "timestamp", "timestamp_in_long": "timestamp", "string": "string",
        "boolean": "boolean",
    }, {3: {
        "int8": 3, "int16": 129, "int32": 2147483646, "int64": 9223372036854775806,
        "bigInt": Decimal("10223372036854775806"), "float32": FLOAT32, "float64": 9.999999999999999,
        "decimal": "9." + "9" * 64, "bytes": b"hello world", "localDate": dt.date(2020, 11, 25),
        "localTime": "00:01:02", "localDateTime": _utc(2020, 11, 25, 0, 1, 2, 12345),
        # [Unix timestamp][.nnnnnnnnn]: seconds, also without a fraction
        "timestamp_in_long": _utc(2020, 11, 24, 16, 1, 2), "string": "hello world", "boolean": True,
    }})


def test_oms_avro_types(typed_lake):
    _check(typed_lake, "typed_avro__av", "id", {
        # MySQL's type numbers do not say signed or unsigned: the unsigned range must fit
        "id": "decimal(20,0)", "qty": "bigint", "small": "int", "price": "decimal(20,4)", "wide": "string",
        "ratio": "double", "name": "string", "vbin": "binary", "blob": "binary", "txt": "string", "ts": "timestamp",
        "dt": "timestamp", "day": "date", "yr": "int", "doc": "string",
    }, {
        Decimal("18446744073709551615"): {
            "qty": 4294967295, "small": -32768, "price": Decimal("12345678901234.5678"), "wide": WIDE, "ratio": 0.25,
            "name": "CJK \u4e2d\u6587 \U0001F600", "vbin": b"\x00\xff\x80", "blob": b"\x01\x02\xff",
            "txt": "text \u00e9", "ts": _utc(2023, 11, 14, 22, 13, 20, 123456),
            "dt": _utc(2024, 2, 29, 23, 59, 59, 123456), "day": dt.date(1969, 7, 20), "yr": 2024,
            "doc": "{\"a\": [1, 2.50]}"},
        Decimal("2"): {name: None for name in AVRO_FIELDS if name != "id"},
    })
    # the newest change's NULLs carry no precision / scale / charset: the types stay
    changes = typed_lake.rows("select column_name, type_change from gold.cdc_typed_columns "
                              "where source_database = 'typed_avro' and type_change is not null")
    assert changes == []


def test_odd_names_are_quoted(typed_lake):
    view = _view_name("typed_odd", ODD_TABLE)
    assert view == "typed_odd__odd_tab_le_____"
    assert {r["tableName"] for r in typed_lake.rows("show tables in gold")} >= {view, view + "__history"}
    _check(typed_lake, view, "sp ace", {
        "sp ace": "int", "do.t": "decimal(5,2)", "back`tick": "string", "quo'te": "string", "dq\"uote": "timestamp",
        "\u4e2d\u6587\u5217": "bigint", "back\\slash": "date",
    }, {7: {"do.t": Decimal("-999.99"), "back`tick": "`", "quo'te": "'", "dq\"uote": _utc(2001, 2, 3, 4, 5, 6),
            "\u4e2d\u6587\u5217": -42, "back\\slash": dt.date(2001, 2, 3)}})
    mapping = typed_lake.rows("select distinct source_table, view_name from gold.cdc_typed_columns "
                              "where source_database = 'typed_odd'")
    assert mapping == [{"source_table": ODD_TABLE, "view_name": view}]


def test_debezium_wide_decimals_and_timestamps(typed_lake):
    _check(typed_lake, "typed_dbz__wide", "id", {
        "id": "bigint", "ubig": "decimal(20,0)", "wide": "string", "vsd": "string", "ts": "timestamp",
        "zts": "timestamp",
    }, {
        1: {"ubig": Decimal("18446744073709551615"), "wide": WIDE, "vsd": "-123456.789",
            "ts": _utc(1969, 12, 31, 23, 59, 59, 999000), "zts": _utc(2024, 2, 29, 23, 59, 59, 123456)},
        2: {"ubig": Decimal("0"), "wide": "9" * 34 + "." + "9" * 30, "vsd": "1" + "0" * 40,
            "ts": _utc(2023, 11, 14, 22, 13, 20, 123000), "zts": _utc(1969, 12, 31, 23, 59, 59)},
    })
