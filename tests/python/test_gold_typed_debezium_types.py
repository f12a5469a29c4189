"""Every Debezium logical type of the PostgreSQL and MySQL/MariaDB connectors, typed in gold.

The messages are written as Debezium 3.x's JsonConverter writes them (schema + payload): each
column's schema `type` / `name` / `parameters` (and an array's `items`) as the connectors'
value converters build them, in every time.precision.mode, decimal.handling.mode,
binary.handling.mode and interval.handling.mode. docs/types.md is the table this checks.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

from cdc_messages import Raw, dumps, envelope


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _decimal(unscaled: int) -> str:
    """Kafka Connect Decimal: the unscaled value, big-endian two's complement, base64."""
    return _b64(unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True))


def _named(name: str, kind: str, **parameters: str) -> dict:
    schema: dict = {"type": kind, "optional": True, "name": name, "version": 1}
    if parameters:
        schema["parameters"] = parameters
    return schema


def _array(items: dict) -> dict:
    return {"type": "array", "optional": True, "items": {**items, "optional": True}}


TIME = "io.debezium.time."
DATA = "io.debezium.data."
CONNECT = "org.apache.kafka.connect.data."
SOURCE_TYPE = "__debezium.source.column.type"
# POINT(1 2) as WKB (Debezium sends the SRID beside it)
WKB = bytes.fromhex("0101000000000000000000f03f0000000000000040")
NOON = 45296  # 12:34:56 in seconds

# (column, schema, value as sent, Spark type, value read back)
POSTGRES = [
    ("t_ms", _named(TIME + "Time", "int32"), NOON * 1000 + 123, "string", "12:34:56.123"),
    ("t_us", _named(TIME + "MicroTime", "int64"), NOON * 10**6 + 123456, "string", "12:34:56.123456"),
    ("t_us_whole", _named(TIME + "MicroTime", "int64"), NOON * 10**6, "string", "12:34:56"),
    ("t_ns", _named(TIME + "NanoTime", "int64"), NOON * 10**9 + 123456789, "string", "12:34:56.123456789"),
    ("t_connect", _named(CONNECT + "Time", "int32"), NOON * 1000 + 5, "string", "12:34:56.005"),
    ("t_iso", _named(TIME + "IsoTime", "string"), "12:34:56.123456Z", "string", "12:34:56.123456Z"),
    ("t_zoned", _named(TIME + "ZonedTime", "string"), "10:34:56.5Z", "string", "10:34:56.5Z"),
    ("d_connect", _named(CONNECT + "Date", "int32"), 19782, "date", dt.date(2024, 2, 29)),
    ("d_iso", _named(TIME + "IsoDate", "string"), "1969-07-20Z", "date", dt.date(1969, 7, 20)),
    ("ts_ms", _named(TIME + "Timestamp", "int64"), 1709251199123, "timestamp",
     dt.datetime(2024, 2, 29, 23, 59, 59, 123000)),
    ("ts_us", _named(TIME + "MicroTimestamp", "int64"), -1, "timestamp",
     dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    ("ts_ns", _named(TIME + "NanoTimestamp", "int64"), Raw("1709251199123456789"), "timestamp",
     dt.datetime(2024, 2, 29, 23, 59, 59, 123456)),
    ("ts_connect", _named(CONNECT + "Timestamp", "int64"), -86400000, "timestamp", dt.datetime(1969, 12, 31)),
    ("ts_iso", _named(TIME + "IsoTimestamp", "string"), "2024-02-29T23:59:59.5Z", "timestamp",
     dt.datetime(2024, 2, 29, 23, 59, 59, 500000)),
    ("tstz", _named(TIME + "ZonedTimestamp", "string"), "2024-03-01T05:29:59.123456+05:30", "timestamp",
     dt.datetime(2024, 2, 29, 23, 59, 59, 123456)),
    ("iv_micros", _named(TIME + "MicroDuration", "int64"), 93784500000, "string", "P1DT2H3M4.5S"),
    ("iv_negative", _named(TIME + "MicroDuration", "int64"), -1500000, "string", "-P0DT0H0M1.5S"),
    ("iv_string", _named(TIME + "Interval", "string"), "P1Y2M3DT4H5M6.78S", "string", "P1Y2M3DT4H5M6.78S"),
    ("num_any", {**_named(DATA + "VariableScaleDecimal", "struct"), "fields": []},
     {"scale": 3, "value": _decimal(-12345)}, "string", "-12.345"),
    ("num_wide", _named(CONNECT + "Decimal", "bytes", **{"scale": "30", "connect.decimal.precision": "65"}),
     _decimal(10**64 + 7), "string", "10000000000000000000000000000000000.000000000000000000000000000007"),
    ("money", _named(CONNECT + "Decimal", "bytes", scale="2"), _decimal(-99999), "decimal(38,2)",
     decimal.Decimal("-999.99")),
    ("num_string", {"type": "string", "optional": True, "parameters": {
        SOURCE_TYPE: "NUMERIC", "__debezium.source.column.length": "10", "__debezium.source.column.scale": "2"}},
     "12345678.90", "decimal(10,2)", decimal.Decimal("12345678.90")),
    ("num_string_plain", {"type": "string", "optional": True}, "1e400", "string", "1e400"),
    ("num_double", {"type": "float64", "optional": True}, Raw("1.25"), "double", 1.25),
    ("bytea", {"type": "bytes", "optional": True}, _b64(b"\x00\xff\xfb"), "binary", b"\x00\xff\xfb"),
    ("bytea_url_safe", {"type": "string", "optional": True, "parameters": {SOURCE_TYPE: "BYTEA"}},
     base64.urlsafe_b64encode(b"\xfb\xff\x00").decode(), "binary", b"\xfb\xff\x00"),
    ("varbit", _named(DATA + "Bits", "bytes", length="16"), _b64(b"\x05"), "binary", b"\x00\x05"),
    ("bit1", {"type": "boolean", "optional": True}, True, "boolean", True),
    ("doc", _named(DATA + "Json", "string"), '{"a": [1, 2.50]}', "string", '{"a": [1, 2.50]}'),
    ("uid", _named(DATA + "Uuid", "string"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "string",
     "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("mood", _named(DATA + "Enum", "string", allowed="sad,ok,happy"), "ok", "string", "ok"),
    ("page", _named(DATA + "Xml", "string"), "<a>1</a>", "string", "<a>1</a>"),
    ("path", _named("io.debezium.data.Ltree", "string"), "Top.Science", "string", "Top.Science"),
    ("addr", {"type": "string", "optional": True}, "192.168.0.1/24", "string", "192.168.0.1/24"),
    ("tags_json", _named(DATA + "Json", "string"), '{"a":"1"}', "string", '{"a":"1"}'),
    ("tags_map", {"type": "map", "optional": True, "keys": {"type": "string"}, "values": {"type": "string"}},
     {"a": "1", "b": None}, "map<string,string>", {"a": "1", "b": None}),
    ("geom", {**_named(DATA + "geometry.Geometry", "struct"), "fields": []},
     {"wkb": _b64(WKB), "srid": 4326}, "binary", WKB),
    ("pt", {**_named(DATA + "geometry.Point", "struct"), "fields": []},
     {"x": Raw("1.0"), "y": Raw("2.0"), "wkb": _b64(WKB), "srid": None}, "binary", WKB),
    ("ints", _array({"type": "int32"}), [1, None, -3], "array<int>", [1, None, -3]),
    ("texts", _array({"type": "string"}), ["a", "b,c", None], "array<string>", ["a", "b,c", None]),
    ("dates", _array({"type": "int32", "name": TIME + "Date"}), [0, 19782], "array<date>",
     [dt.date(1970, 1, 1), dt.date(2024, 2, 29)]),
    ("prices", _array({"type": "bytes", "name": CONNECT + "Decimal",
                       "parameters": {"scale": "2", "connect.decimal.precision": "5"}}),
     [_decimal(12345), _decimal(-1)], "array<decimal(5,2)>", [decimal.Decimal("123.45"), decimal.Decimal("-0.01")]),
    ("times", _array({"type": "int64", "name": TIME + "MicroTime"}), [0, NOON * 10**6], "array<string>",
     ["00:00:00", "12:34:56"]),
    ("uuids", _array({"type": "string", "name": DATA + "Uuid"}), ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],
     "array<string>", ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
]

MYSQL = [
    ("t_max", _named(TIME + "MicroTime", "int64"), 838 * 3600 * 10**6 + 59 * 60 * 10**6 + 59 * 10**6, "string",
     "838:59:59"),
    ("t_negative", _named(TIME + "MicroTime", "int64"), -(3723 * 10**6 + 500000), "string", "-01:02:03.500000"),
    ("t_ms", _named(TIME + "Time", "int32"), -1, "string", "-00:00:00.001"),
    ("yr", _named(TIME + "Year", "int32"), 2024, "int", 2024),
    ("flags", _named(DATA + "Bits", "bytes", length="10"), _b64(b"\x01\x02"), "binary", b"\x02\x01"),
    ("bit1", {"type": "boolean", "optional": True}, False, "boolean", False),
    ("sizes", _named(DATA + "EnumSet", "string", allowed="s,m,l"), "s,l", "string", "s,l"),
    ("shape", {**_named(DATA + "geometry.Geometry", "struct"), "fields": []},
     {"wkb": _b64(WKB), "srid": None}, "binary", WKB),
    ("dt", _named(TIME + "Timestamp", "int64"), -1000, "timestamp", dt.datetime(1969, 12, 31, 23, 59, 59)),
    ("dt_out_of_range", _named(TIME + "Timestamp", "int64"), Raw("9223372036854775807"), "timestamp", None),
    ("ts", _named(TIME + "ZonedTimestamp", "string"), "2024-02-29T23:59:59Z", "timestamp",
     dt.datetime(2024, 2, 29, 23, 59, 59)),
    ("big_unsigned", _named(CONNECT + "Decimal", "bytes", **{"scale": "0", "connect.decimal.precision": "20"}),
     _decimal(2**64 - 1), "decimal(20,0)", decimal.Decimal(2**64 - 1)),
    ("blob", {"type": "bytes", "optional": True}, _b64(b"\x00\x01"), "binary", b"\x00\x01"),
]

# binary.handling.mode=hex: read as hex only with the project's var (the schema cannot say)
HEX = ("blob_hex", {"type": "string", "optional": True, "parameters": {SOURCE_TYPE: "BLOB"}}, "00ff10",
       "binary", b"\x00\xff\x10")


def _message(columns: list[tuple], source: dict) -> str:
    fields = [{"field": "id", "type": "int32", "optional": False}]
    fields += [{**schema, "field": name} for name, schema, *_ in columns]
    schema = {"type": "struct", "fields": [
        {"field": "before", "type": "struct", "optional": True, "fields": fields},
        {"field": "after", "type": "struct", "optional": True, "fields": fields},
        {"field": "source", "type": "struct", "fields": []},
        {"field": "op", "type": "string"},
    ]}
    after = {"id": 1, **{name: value for name, _, value, *_ in columns}}
    return dumps({"schema": schema, "payload": {
        "before": None, "after": after, "source": source, "op": "c", "ts_ms": 1_700_000_000_000}})


def _smt_message(columns: list[tuple]) -> str:
    fields = [{"field": "id", "type": "int32", "optional": False}]
    fields += [{**schema, "field": name} for name, schema, *_ in columns]
    fields.append({"field": "__deleted", "type": "string", "optional": True})
    payload = {"id": 1, **{name: value for name, _, value, *_ in columns}, "__deleted": "false"}
    return dumps({"schema": {"type": "struct", "fields": fields}, "payload": payload})


def _check(lakehouse, view: str, columns: list[tuple]) -> None:
    types = {r["col_name"]: r["data_type"] for r in lakehouse.rows(f"describe gold.{view}")}
    row = lakehouse.rows(f"select * from gold.{view}")[0]
    wrong = {}
    for name, _, _, spark_type, expected in columns:
        got = row[name]
        got = bytes(got) if isinstance(got, (bytes, bytearray)) else got
        if types.get(name) != spark_type or got != expected:
            wrong[name] = (types.get(name), got, spark_type, expected)
    assert not wrong, wrong


def test_every_debezium_type_reads_as_its_spark_type(lakehouse):
    key = json.dumps({"id": 1})
    postgres = _message(POSTGRES, {"connector": "postgresql", "db": "pg", "schema": "public",
                                   "table": "all_types", "lsn": 24023128, "txId": 555})
    mysql = _message([*MYSQL, HEX], {"connector": "mysql", "db": "shop", "table": "all_types",
                                     "file": "mysql-bin.000003", "pos": 400, "row": 0})
    lakehouse.ingest([envelope("pg.public.all_types", 0, 0, key, postgres),
                      envelope("my.shop.all_types", 0, 0, key, mysql)], fmt="debezium-json")
    smt = [c for c in POSTGRES if c[0] in ("t_us", "varbit", "ints", "prices", "tstz", "num_any")]
    lakehouse.ingest([envelope("smt.shop.smt_types", 0, 0, key, _smt_message(smt))], fmt="debezium-smt")
    lakehouse.build(tests=False)

    _check(lakehouse, "pg__public__all_types", POSTGRES)
    _check(lakehouse, "shop__all_types", MYSQL)
    _check(lakehouse, "shop__smt_types", smt)
    # the current state keeps the values as Debezium sent them
    sent = lakehouse.rows("select get_json_object(row, '$.t_ms') as t from gold.cdc_current_state "
                          "where source_table = 'all_types'")
    assert sorted(r["t"] for r in sent) == ["-1", str(NOON * 1000 + 123)]
    # the SMT's row too: a struct and an array stay JSON, numbers exact, the SMT's fields gone
    smt_rows = lakehouse.rows("select row from gold.cdc_current_state where source_table = 'smt_types'")
    smt_row = json.loads(smt_rows[0]["row"])
    sent_smt = json.loads(_smt_message(smt))["payload"]
    assert smt_row == {k: v for k, v in sent_smt.items() if k != "__deleted"}

    # hex mode: a var, as binary.handling.mode is nowhere in the message
    lakehouse.build("--select", "cdc_typed_columns", "--vars", "{cdc_debezium_binary_handling_mode: hex}",
                    tests=False)
    _check(lakehouse, "shop__all_types", [HEX])
