"""Shared helpers of the real-database tests (test_real_postgres.py, test_real_mariadb.py).

A real database, Debezium (:mod:`lakehouse.local`), the session's Kafka broker and one lakehouse
driven through the CLI. Both sides of a comparison are brought to one canonical text per value,
decided by the *database's* column type: exact numerics as plain decimal text, times and
durations as signed microseconds, timestamps as UTC ``YYYY-MM-DDTHH:MM:SS.ffffff``, binary and
geometry as lower-case hex, bit strings as their integer, JSON re-serialised with sorted keys.

- the database side: a ``SELECT`` whose expressions print each type exactly (:func:`pg_rows`,
  :func:`mariadb_rows`);
- ``gold.cdc_current_state.row`` holds the values as Debezium sent them: decoded with the field
  schemas read back from the topic (:func:`topic_schemas`, :func:`decode_debezium`);
- the typed views: read with Spark in a subprocess (this file run as a script, :func:`dump`), each
  Python value tagged with its type (Decimal, datetime, bytes, ...) on the way.

Run as ``python real_databases.py dump`` with ``LAKEHOUSE_DIR`` set: prints one JSON object per
row of every gold view and of ``gold.cdc_current_state`` / ``silver.cdc_quarantine``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
#: Room for 65-digit decimals: the default 28 digits would round both sides of a comparison alike.
DECIMALS = decimal.Context(prec=200)
#: The databases' folders: under the checkout, which their OS users (postgres, mysql) can enter,
#: unlike pytest's own temporary folders (mode 0700).
SCRATCH = PROJECT / ".cache" / "pytest-real-databases"

# --------------------------------------------------------------------------- canonical text


def scratch_dir(name: str) -> Path:
    """A fresh folder for one database server of one test run."""
    path = SCRATCH / f"{name}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True)
    path.chmod(0o755)
    SCRATCH.chmod(0o755)
    return path


def remove_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def canon_decimal(value: Any) -> str:
    d = decimal.Decimal(str(value))
    if d == 0:
        return "0"
    return format(d.normalize(DECIMALS), "f")


def _micros_of_text(text: str) -> int:
    """``[-]H...H:MM:SS[.ffffff]`` (a time of day or a MariaDB TIME), a time with a zone as
    Debezium's ZonedTime writes it (``08:11:12Z``: the UTC time of day), or an ISO-8601
    duration without months (``[-]P3DT4H5M6.789S``), in microseconds."""
    text = text.strip()
    duration = re.fullmatch(r"(-)?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?", text)
    if duration and text not in ("P", "-P"):
        sign, d, h, mi, s, frac = duration.groups()
        seconds = ((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60 + int(s or 0)
        micros = seconds * 1_000_000 + int((frac or "0").ljust(6, "0")[:6])
        return -micros if sign else micros
    m = re.fullmatch(r"(-)?(\d+):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?", text)
    if not m:
        raise ValueError(f"not a time: {text!r}")
    sign, h, mi, s, frac, zone = m.groups()
    micros = ((int(h) * 60 + int(mi)) * 60 + int(s)) * 1_000_000 + int((frac or "0").ljust(6, "0")[:6])
    if zone and zone != "Z":
        offset = (int(zone[1:3]) * 60 + int(zone[-2:])) * 60_000_000
        micros = (micros - offset if zone[0] == "+" else micros + offset) % (24 * 3600 * 1_000_000)
    return -micros if sign else micros


def _timestamp_text(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond:06d}"


def _parse_timestamp(text: str) -> str:
    text = text.strip().replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    m = re.fullmatch(r"(.*?)(\.\d+)?([+-]\d\d:?\d\d)?", text)
    base, frac, tz = m.groups() if m else (text, None, None)
    value = dt.datetime.fromisoformat(base + (frac or "")[:7] + (tz or ""))
    return _timestamp_text(value)


def canon_json(value: Any) -> str:
    parsed = json.loads(value, parse_float=decimal.Decimal) if isinstance(value, str) else value

    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, decimal.Decimal):
            return canon_decimal(v)
        return v

    return json.dumps(norm(parsed), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canon(kind: str, value: Any) -> str | None:
    """The canonical text of ``value`` for a column of ``kind`` (None stays None).

    ``value`` may be database text, a Debezium-decoded Python value or a tagged typed-view value.
    """
    if value is None:
        return None
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TAGS:
        value = _untag(value)
    if kind.startswith("array:"):
        items = json.loads(value) if isinstance(value, str) else value
        return json.dumps([canon(kind[6:], v) for v in items])
    if kind == "int":
        return str(int(decimal.Decimal(str(value))))
    if kind == "decimal":
        return canon_decimal(value)
    if kind in ("float4", "float8"):
        return format(float(value), ".6g" if kind == "float4" else ".15g")
    if kind == "bool":
        return "true" if value in (True, "t", "true", 1, "1") else "false"
    if kind in ("hex", "geometry"):
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).hex()
        return str(value).lower()
    if kind == "bits":
        if isinstance(value, bool):
            return str(int(value))
        if isinstance(value, (bytes, bytearray)):
            return str(int.from_bytes(bytes(value), "big"))
        if isinstance(value, str) and re.fullmatch(r"[01]+", value):
            return str(int(value, 2))
        return str(int(value))
    if kind == "date":
        return value.isoformat() if isinstance(value, dt.date) else str(value)[:10]
    if kind in ("time", "duration"):
        if isinstance(value, dt.timedelta):
            return str(value // dt.timedelta(microseconds=1))
        if isinstance(value, dt.time):
            return str(((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond)
        if isinstance(value, int) or re.fullmatch(r"-?\d+", str(value)):
            return str(int(value))
        return str(_micros_of_text(str(value)))
    if kind == "timestamp":
        if isinstance(value, dt.datetime):
            return _timestamp_text(value)
        return _parse_timestamp(str(value))
    if kind == "json":
        return canon_json(value)
    return str(value)


# --------------------------------------------------------------------------- typed-view values

_TAGS = ("decimal", "datetime", "date", "time", "bytes", "timedelta")


def _tag(value: Any) -> Any:
    """A JSON form of a Spark value that keeps its Python type (see :func:`_untag`)."""
    if isinstance(value, decimal.Decimal):
        return {"decimal": format(value, "f")}
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"time": value.isoformat()}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, dt.timedelta):
        return {"timedelta": value // dt.timedelta(microseconds=1)}
    if isinstance(value, (list, tuple)) and not hasattr(value, "asDict"):
        return [_tag(v) for v in value]
    if hasattr(value, "asDict"):
        return {k: _tag(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {str(k): _tag(v) for k, v in value.items()}
    return value


def _untag(value: dict) -> Any:
    (tag, raw), = value.items()
    if tag == "decimal":
        return decimal.Decimal(raw)
    if tag == "datetime":
        return dt.datetime.fromisoformat(raw)
    if tag == "date":
        return dt.date.fromisoformat(raw)
    if tag == "time":
        return dt.time.fromisoformat(raw)
    if tag == "bytes":
        return bytes.fromhex(raw)
    return dt.timedelta(microseconds=raw)


def dump() -> None:
    """Print every gold view's rows, ``gold.cdc_current_state`` and the quarantine (script mode)."""
    from lakehouse.session import get_spark

    spark = get_spark("real-databases-dump")
    names = [r.tableName for r in spark.sql("show tables in gold").collect()]
    for name in sorted(names):
        if name.startswith("cdc_") and name != "cdc_current_state":
            continue
        df = spark.table(f"gold.{name}")
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        print(json.dumps({"relation": f"gold.{name}", "types": types}))
        for row in df.collect():
            print(json.dumps({"relation": f"gold.{name}", "row": _tag(row.asDict())}))
    quarantine = "select kafka_topic, reason, cast(raw_value as string) as v from silver.cdc_quarantine"
    for row in spark.sql(quarantine).collect():
        print(json.dumps({"relation": "silver.cdc_quarantine", "row": _tag(row.asDict())}))
    spark.stop()


@dataclass
class Dump:
    """What :func:`dump` printed: rows and Spark types per relation."""

    rows: dict[str, list[dict[str, Any]]]
    types: dict[str, dict[str, str]]

    def current_state(self, database: str, table: str, fmt: str = "debezium-json") -> list[dict[str, Any]]:
        return [r for r in self.rows.get("gold.cdc_current_state", [])
                if r["source_database"] == database and r["source_table"] == table and r["source_format"] == fmt]


def read_gold(root: Path) -> Dump:
    """Run :func:`dump` in a subprocess on the lakehouse ``root`` (its own Spark driver, then gone)."""
    env = dict(os.environ, LAKEHOUSE_DIR=str(root), TZ="UTC")
    env.setdefault("LAKEHOUSE_DRIVER_MEMORY", "2g")
    proc = subprocess.run([sys.executable, __file__, "dump"], env=env, cwd=PROJECT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, f"reading gold failed:\n{proc.stderr[-5000:]}"
    rows: dict[str, list[dict[str, Any]]] = {}
    types: dict[str, dict[str, str]] = {}
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        if "types" in obj:
            types[obj["relation"]] = obj["types"]
            rows.setdefault(obj["relation"], [])
        else:
            rows.setdefault(obj["relation"], []).append(obj["row"])
    return Dump(rows, types)


# --------------------------------------------------------------------------- Debezium's encoding


def topic_schemas(bootstrap: str, topics: Iterable[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """For each topic, each row field's Connect schema (the latest seen: columns change type)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"schemas-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})  # fmt: skip
    out: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for topic in topics:
            fields: dict[str, dict[str, Any]] = {}
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            consumer.assign([TopicPartition(topic, 0, low)])
            seen = low
            while seen < high:
                msg = consumer.poll(10)
                assert msg is not None, f"{topic}: no record at offset {seen} of {high}"
                seen = msg.offset() + 1
                if msg.error() or not msg.value():
                    continue
                value = json.loads(msg.value())
                schema = value.get("schema") or {}
                parts = {f["field"]: f for f in schema.get("fields", [])}
                row_schema = parts.get("after") or parts.get("before") or schema
                for f in row_schema.get("fields", []):
                    if "field" in f:
                        fields[f["field"]] = f
            out[topic] = fields
    finally:
        consumer.close()
    return out


def _unscaled(b64: str) -> int:
    return int.from_bytes(base64.b64decode(b64), "big", signed=True)


def decode_debezium(schema: dict[str, Any] | None, value: Any) -> Any:
    """A field as Debezium's JsonConverter wrote it, as a plain Python value (see :func:`canon`)."""
    if value is None or schema is None:
        return value
    name = schema.get("name", "")
    params = schema.get("parameters", {})
    kind = schema.get("type")
    if name == "org.apache.kafka.connect.data.Decimal":
        return decimal.Decimal(_unscaled(value)).scaleb(-int(params["scale"]), DECIMALS)
    if name == "io.debezium.data.VariableScaleDecimal":
        return decimal.Decimal(_unscaled(value["value"])).scaleb(-int(value["scale"]), DECIMALS)
    if name == "io.debezium.time.Date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if name == "io.debezium.time.Time":
        return value * 1000
    if name == "io.debezium.time.MicroTime":
        return value
    if name == "io.debezium.time.NanoTime":
        return value // 1000
    if name in ("io.debezium.time.Timestamp", "io.debezium.time.MicroTimestamp", "io.debezium.time.NanoTimestamp"):
        per_second = {"io.debezium.time.Timestamp": 1000, "io.debezium.time.MicroTimestamp": 10**6}.get(name, 10**9)
        micros = value * 10**6 // per_second
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    if name == "io.debezium.time.ZonedTimestamp":
        return value
    if name == "io.debezium.time.ZonedTime":
        return value.rstrip("Z").split("+")[0]
    if name == "io.debezium.time.MicroDuration":
        return value
    if name == "io.debezium.data.Bits":
        return int.from_bytes(base64.b64decode(value), "little")
    if name in ("io.debezium.data.geometry.Geometry", "io.debezium.data.geometry.Point"):
        return base64.b64decode(value["wkb"])
    if kind == "bytes":
        return base64.b64decode(value)
    if kind == "array":
        return [decode_debezium(schema.get("items"), v) for v in value]
    return value


# --------------------------------------------------------------------------- the databases' rows


def pg_columns(run_sql: Any, table: str) -> list[tuple[str, str, str]]:
    """(name, canonical kind, select expression) of each column of ``table``, in order."""
    out = run_sql(
        "select attname, format_type(atttypid, atttypmod), t.typtype, t.typcategory "
        "from pg_attribute a join pg_type t on t.oid = a.atttypid "
        f"where attrelid = 'public.{table}'::regclass and attnum > 0 and not attisdropped order by attnum"
    )
    cols = []
    for line in out.splitlines():
        name, typ, typtype, category = line.split("|")
        q = f'"{name}"'
        base = re.sub(r"\(.*?\)", "", typ)
        if typ.endswith("[]"):
            elem = _pg_kind(base[:-2], typtype, "")[0]
            cols.append((name, f"array:{elem}", f"to_json({q})::text"))
            continue
        kind, expr = _pg_kind(base, typtype, category)
        cols.append((name, kind, expr.format(q) if "{0}" not in expr else expr.replace("{0}", q)))
    return cols


def _pg_kind(base: str, typtype: str, category: str) -> tuple[str, str]:
    table = {
        "smallint": ("int", "{}::text"), "integer": ("int", "{}::text"), "bigint": ("int", "{}::text"),
        "numeric": ("decimal", "{}::text"), "money": ("decimal", "{}::numeric::text"),
        "real": ("float4", "{}::text"), "double precision": ("float8", "{}::text"),
        "boolean": ("bool", "{}::text"), "bytea": ("hex", "encode({}, 'hex')"),
        "date": ("date", "{}::text"), "time without time zone": ("time", "{}::text"),
        "time with time zone": ("time", "({} at time zone 'UTC')::time::text"),
        "timestamp without time zone": ("timestamp", "to_char({}, 'YYYY-MM-DD\"T\"HH24:MI:SS.US')"),
        "timestamp with time zone": ("timestamp", "to_char({} at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US')"),
        "interval": ("duration", "(extract(epoch from {}) * 1000000)::bigint::text"),
        "json": ("json", "{}::text"), "jsonb": ("json", "{}::text"),
        "bit": ("bits", "{}::text"), "bit varying": ("bits", "{}::text"),
    }
    if base == "character":
        # concat() prints char(n) with its padding, as SELECT * does; a cast to text would trim it.
        return ("text", "case when {0} is null then null else concat({0}) end")
    return table.get(base, ("text", "{}::text"))


def pg_rows(run_sql: Any, table: str) -> tuple[list[tuple[str, str, str]], list[dict[str, str | None]]]:
    """The columns of ``table`` and its rows in canonical text (``SELECT *`` as the database sees it)."""
    cols = pg_columns(run_sql, table)
    exprs = ", ".join(expr for _, _, expr in cols)
    out = run_sql(f"select coalesce(json_agg(json_build_array({exprs})), '[]') from public.{table}").strip()
    rows = [{name: canon(kind, v) for (name, kind, _), v in zip(cols, raw, strict=True)} for raw in json.loads(out)]
    return cols, rows


def mariadb_columns(run_sql: Any, database: str, table: str) -> list[tuple[str, str, str]]:
    out = run_sql(
        "select column_name, data_type, column_type from information_schema.columns "
        f"where table_schema = '{database}' and table_name = '{table}' order by ordinal_position"
    )
    cols = []
    for line in out.splitlines():
        name, data_type, column_type = line.split("\t")
        q = f"`{name}`"
        kinds = {
            "tinyint": "int", "smallint": "int", "mediumint": "int", "int": "int", "bigint": "int", "year": "int",
            "decimal": "decimal", "float": "float4", "double": "float8", "bit": "bits", "date": "date",
            "time": "duration", "datetime": "timestamp", "timestamp": "timestamp", "json": "json",
            "binary": "hex", "varbinary": "hex", "tinyblob": "hex", "blob": "hex", "mediumblob": "hex",
            "longblob": "hex", "geometry": "geometry", "point": "geometry",
        }
        kind = kinds.get(data_type, "text")
        if column_type.startswith("longtext") and "json" in name.lower():
            kind = "json"
        expr = {
            "bits": f"BIN({q} + 0)", "hex": f"LOWER(HEX({q}))", "geometry": f"LOWER(HEX(ST_AsWKB({q})))",
            "timestamp": f"DATE_FORMAT({q}, '%Y-%m-%dT%H:%i:%s.%f')",
        }.get(kind, f"CAST({q} AS CHAR)" if kind != "text" else q)
        cols.append((name, kind, expr))
    return cols


def mariadb_rows(run_sql: Any, database: str, table: str) -> tuple[list[tuple[str, str, str]], list[dict]]:
    cols = mariadb_columns(run_sql, database, table)
    exprs = ", ".join(expr for _, _, expr in cols)
    out = run_sql(f"SELECT JSON_ARRAY({exprs}) FROM `{database}`.`{table}`")
    rows = []
    for line in out.splitlines():
        if line.strip():
            raw = json.loads(line)
            rows.append({name: canon(kind, v) for (name, kind, _), v in zip(cols, raw, strict=True)})
    return cols, rows


# --------------------------------------------------------------------------- comparisons


def _key(row: dict[str, str | None], names: list[str]) -> tuple:
    return tuple("\u0000NULL" if row.get(n) is None else row[n] for n in names)


def differences(
    label: str, cols: list[tuple[str, str, str]], db: list[dict], lake: list[dict], key: list[str] | None
) -> list[str]:
    """Human-readable differences between two row multisets over the database's columns."""
    names = [c[0] for c in cols]
    out = []
    if key:
        db_by = {_key(r, key): r for r in db}
        lake_by: dict[tuple, list[dict]] = {}
        for r in lake:
            lake_by.setdefault(_key(r, key), []).append(r)
        for k, rows in lake_by.items():
            if len(rows) > 1:
                out.append(f"{label}: key {k} appears {len(rows)} times")
        for k in sorted(set(db_by) | set(lake_by)):
            if k not in lake_by:
                out.append(f"{label}: key {k} missing (database: {db_by[k]})")
            elif k not in db_by:
                out.append(f"{label}: key {k} not in the database (lakehouse: {lake_by[k][0]})")
            else:
                for n in names:
                    if db_by[k].get(n) != lake_by[k][0].get(n):
                        out.append(f"{label}: key {k} column {n}: lakehouse {lake_by[k][0].get(n)!r}, "
                                   f"database {db_by[k].get(n)!r}")
        return out
    want = Counter(_key(r, names) for r in db)
    got = Counter(_key(r, names) for r in lake)
    for row, n in sorted((want - got).items()):
        out.append(f"{label}: missing {n} x {dict(zip(names, row, strict=True))}")
    for row, n in sorted((got - want).items()):
        out.append(f"{label}: extra {n} x {dict(zip(names, row, strict=True))}")
    return out


def current_state_rows(
    dumped: Dump, database: str, table: str, cols: list[tuple[str, str, str]], schemas: dict[str, dict],
    fmt: str = "debezium-json",
) -> list[dict[str, str | None]]:  # fmt: skip
    """``gold.cdc_current_state``'s rows of ``table`` in canonical text over the database's columns."""
    out = []
    for r in dumped.current_state(database, table, fmt):
        row = json.loads(r["row"], parse_float=decimal.Decimal)
        out.append({name: canon(kind, decode_debezium(schemas.get(name), row.get(name))) for name, kind, _ in cols})
    return out


def typed_view(dumped: Dump, names: Iterable[str]) -> str | None:
    """The first of ``names`` (candidate view names, lower case) that gold has, or None."""
    return next((f"gold.{n.lower()}" for n in names if f"gold.{n.lower()}" in dumped.types), None)


def typed_view_rows(dumped: Dump, view: str, cols: list[tuple[str, str, str]]) -> list[dict[str, str | None]]:
    """The typed view's rows in canonical text over the database's columns; a column the view
    lacks reads as the marker ``<no such column>`` so that it shows in the differences."""
    out = []
    for r in dumped.rows.get(view, []):
        row = {}
        for name, kind, _ in cols:
            if name not in r:
                row[name] = "<no such column>"
                continue
            try:
                row[name] = canon(kind, r[name])
            except (ValueError, TypeError, decimal.InvalidOperation) as exc:
                row[name] = f"<unreadable {r[name]!r}: {exc}>"
        out.append(row)
    return out


def busy_transactions(count: int, rows: int, begin: str = "begin") -> list[str]:
    """``count`` transactions on a table ``busy (id, v, pad)`` of ``rows`` rows: two updates, an
    insert and a delete each, in SQL that PostgreSQL and MariaDB both run."""
    return [f"""{begin};
        update busy set v = v + 1 where id in ({i * 97 % rows + 1}, {rows - i});
        insert into busy values ({rows + 1 + i}, {i}, 'new');
        delete from busy where id = {i * 31 % rows + 2};
        commit""" for i in range(count)]


def write_during_snapshot(run_sql: Any, snapshot_started: Any, statements: list[str], done: list[str]) -> None:
    """Run ``statements`` one after another from the moment ``snapshot_started()`` (a query on the
    database: the connector has connected and begins its snapshot) says so, appending each to
    ``done``: a snapshot taken while writes go on, as it is on a production database."""
    deadline = time.monotonic() + 120
    while not snapshot_started():
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)
    for statement in statements:
        run_sql(statement)
        done.append(statement)


def build_failure(proc: subprocess.CompletedProcess[str]) -> str:
    """What a failed ``lakehouse build`` reported: dbt's failure lines, else the end of its output."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    failed = re.compile(r"Failure in|FAIL \d|ERROR creating|Error in")
    lines = [line.strip() for line in text.splitlines() if failed.search(line)]
    return f"lakehouse build exited {proc.returncode}: " + ("; ".join(lines) or text[-2000:])


def workload_versions(states: list[list[dict]], key: str = "id") -> dict[str, list[dict]]:
    """Per key, the row versions a sequence of table states went through (one state per statement)."""
    expected: dict[str, list[dict]] = {}
    previous: dict[str, dict] = {}
    for state in states:
        now = {row[key]: row for row in state}
        for k, row in now.items():
            if previous.get(k) != row:
                expected.setdefault(k, []).append(row)
        previous = now
    return expected


def history_versions(
    dumped: Dump, view: str, cols: list[tuple[str, str, str]], key: str = "id"
) -> tuple[dict[str, list[dict]], dict[str, bool]]:
    """Per key, the versions of an SCD2 view in ``_cdc_valid_from`` order, and whether the last is closed."""
    raw = dumped.rows.get(view, [])
    typed = typed_view_rows(dumped, view, cols)
    entries: dict[str, list[tuple[str, dict, Any]]] = {}
    for r, t in zip(raw, typed, strict=True):
        valid_from = canon("timestamp", r.get("_cdc_valid_from"))
        entries.setdefault(t[key], []).append((valid_from or "", t, r.get("_cdc_valid_to")))
    versions = {k: [t for _, t, _ in sorted(v, key=lambda x: x[0])] for k, v in entries.items()}
    closed = {k: sorted(v, key=lambda x: x[0])[-1][2] is not None for k, v in entries.items()}
    return versions, closed


if __name__ == "__main__" and sys.argv[1:] == ["dump"]:
    dump()
