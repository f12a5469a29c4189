"""Builders of OceanBase OMS messages (shared/formats/oceanbase-oms.txt), and their hard delivery.

Each table builder writes the messages one source table's changes produce in one OMS
serialization, by the vendor's rules:

* :class:`OmsJsonTable`: Default / DefaultExtendColumnType (``oms-json``): prevStruct /
  postStruct / allMetaData / recordType, keys and values joined with ``\\u0001``,
  storeDataSequence = {seconds}{increment};
* :class:`SharePlexTable`: SharePlex (``shareplex-json``): an update's ``data`` holds only the
  changed columns and ``key`` the before image; ``meta.rowid`` = {table}-{key values};
* :class:`OmsAvroTable`: Avro as JSON (``oms-avro-json``): positional images against ``fields``,
  text as Avro JSON bytes (one character per byte);
* :class:`SmtTable`: DebeziumSmt (``debezium-smt``): after-image fields plus ``__deleted``,
  the key in the Kafka record key, the table in the topic name.

Every builder keeps ``messages`` as (Kafka key, value) pairs in source order and offers
``insert`` / ``update`` / ``delete``, so :func:`play_history` can drive any of them and
return the true final state. Values are JSON text fragments (:class:`cdc_messages.Raw`)
where exactness matters.
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass, field
from typing import Any

from cdc_messages import Raw, dumps, envelope

Row = dict[str, Any]
Message = tuple[str | None, str | None]


def text(value: Any) -> str | None:
    """A value as the JSON-decoded-with-str comparison of the tests sees it."""
    if value is None:
        return None
    if isinstance(value, Raw):
        return json.loads(str(value), parse_float=str, parse_int=str)
    return str(value)


@dataclass
class OmsJsonTable:
    """oms-json messages of one table; ``light_types`` switches on DefaultExtendColumnType."""

    tenant: str
    database: str
    table: str
    key_columns: list[str]
    light_types: dict[str, str] | None = None
    seconds: int = 1_700_000_000
    increment: int = 0
    padded: bool = True
    rng: random.Random = field(default_factory=lambda: random.Random(1))
    messages: list[Message] = field(default_factory=list)

    def _sequence(self) -> Raw:
        # {timestamp seconds}{increment of up to five digits}; seconds advance now and then
        if self.rng.random() < 0.3:
            self.seconds += self.rng.randint(1, 3)
            self.increment = self.rng.randint(0, 20)
        self.increment += 1
        inc = f"{self.increment:05d}" if self.padded else str(self.increment)
        return Raw(f"{self.seconds}{inc}")

    def _meta(self, key_row: Row | None, full_load: bool = False) -> dict[str, Any]:
        keys = key_row is not None and bool(self.key_columns)
        # full load: the checkpoint holds the key's column=value pairs; incremental: seconds
        pairs = "\u0001".join(f"{k}={text(key_row[k])}" for k in self.key_columns) if keys else None
        return {
            "checkpoint": pairs if full_load else str(self.seconds - 5),
            "record_primary_key": "\u0001".join(self.key_columns) if keys else None,
            "record_primary_value": "\u0001".join(text(key_row[k]) for k in self.key_columns) if keys else None,
            "source_identity": None,
            "dbType": "OB_MYSQL",
            "storeDataSequence": None if full_load else self._sequence(),
            "table_name": self.table,
            "db": f"{self.tenant}.{self.database}",
            "timestamp": None if full_load else str(self.seconds),
            "uniqueId": None,
            "transId": None if full_load else f"1001_{len(self.messages)}",
            "clusterId": None,
        }

    def _image(self, row: Row | None) -> Row | None:
        if row is None or self.light_types is None:
            return row
        return {**row, "__light_type": {c: {"schemaType": t} for c, t in self.light_types.items()}}

    def _add(self, record_type: str, meta: dict, prev: Row | None, post: Row | None) -> Message:
        msg = (None, dumps({"allMetaData": meta, "prevStruct": self._image(prev),
                            "postStruct": self._image(post), "recordType": record_type}))
        self.messages.append(msg)
        return msg

    def insert(self, row: Row) -> Message:
        return self._add("INSERT", self._meta(row), None, row)

    def full_load(self, row: Row) -> Message:
        return self._add("ROW", self._meta(row, full_load=True), None, row)

    def update(self, before: Row, after: Row) -> Message:
        return self._add("UPDATE", self._meta(after), before, after)

    def delete(self, row: Row) -> Message:
        return self._add("DELETE", self._meta(row), row, None)

    def heartbeat(self) -> Message:
        self.seconds += 1
        meta = {"checkpoint": str(self.seconds), "dbType": "OB_MYSQL", "timestamp": str(self.seconds),
                "storeDataSequence": None, "db": None, "table_name": None}
        msg = (None, dumps({"allMetaData": meta, "recordType": "HEARTBEAT"}))
        self.messages.append(msg)
        return msg

    def ddl(self, statement: str) -> Message:
        meta = {**self._meta(None), "ddlType": "ALTER_TABLE"}
        return self._add("DDL", meta, None, {"ddl": statement})


@dataclass
class SharePlexTable:
    """shareplex-json messages of one table; updates carry only the changed columns."""

    database: str
    table: str
    key_columns: list[str]
    drop_separator: float = 0.0  # share of messages whose rowid lacks \u0001 (SPEC known slip)
    scn_seconds: int = 1_700_000_000
    increment: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(2))
    messages: list[Message] = field(default_factory=list)

    def rowid_key(self, row: Row) -> str:
        """The identity the parser gives a row without configured key columns."""
        return "".join(text(row[k]) for k in self.key_columns)

    def _meta(self, op: str, row: Row | None) -> dict[str, Any]:
        if self.rng.random() < 0.3:
            self.scn_seconds += 1
            self.increment = 0
        self.increment += 1
        sep = "" if self.rng.random() < self.drop_separator else "\u0001"
        values = sep.join(text(row[k]) for k in self.key_columns) if row else ""
        full = f"{self.database}.{self.table}"
        return {"posttime": "2023-11-14T22:13:30", "op": op, "size": 1, "time": "2023-11-14T22:13:20",
                "idx": "1/1", "seq": 1, "table": full, "rowid": f"{full}-{values}",
                "trans": f"tx{len(self.messages)}", "scn": f"{self.scn_seconds}{self.increment:05d}"}

    def _add(self, body: dict) -> Message:
        msg = (None, dumps(body))
        self.messages.append(msg)
        return msg

    def insert(self, row: Row) -> Message:
        return self._add({"data": row, "meta": self._meta("ins", row)})

    def update(self, before: Row, after: Row) -> Message:
        changed = {c: v for c, v in after.items() if c not in before or text(before[c]) != text(v)}
        return self._add({"data": changed, "meta": self._meta("upd", after), "key": before})

    def delete(self, row: Row) -> Message:
        return self._add({"data": row, "meta": self._meta("del", row)})

    def ddl(self, statement: str) -> Message:
        return self._add({"data": {}, "meta": self._meta("ddl", None), "sql": {"ddl": statement}})


def avro_bytes(value: str) -> dict[str, str]:
    """Avro's JSON form of bytes: one character per byte (U+0000..U+00FF)."""
    return {"bytes": value.encode("utf-8").decode("latin-1")}


@dataclass
class OmsAvroTable:
    """oms-avro-json messages of one table. ``columns``: name -> (dataTypeNumber, kind)."""

    database: str
    table: str
    key_columns: list[str]
    columns: dict[str, tuple[int, str]]
    position: int = 1_700_000_000
    id_ms: int = 1_700_000_000_000
    increment: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(3))
    messages: list[Message] = field(default_factory=list)

    def _entry(self, name: str, value: Any) -> Any:
        number, kind = self.columns[name]
        if value is None:
            return None
        if kind == "int":
            return {"precision": 8, "value": str(value)}
        if kind == "decimal":
            return {"value": str(value), "precision": 65, "scale": 30}
        if kind == "text":
            return {"charset": "utf8mb4", "value": avro_bytes(value)}
        if kind == "blob":
            return {"type": "BLOB", "value": {"bytes": value.decode("latin-1")}}
        raise ValueError(kind)

    def expected(self, row: Row) -> dict[str, str | None]:
        """The row as gold holds it: strings as sent, text decoded, bytes in base64."""
        out: dict[str, str | None] = {}
        for name, value in row.items():
            kind = self.columns[name][1]
            out[name] = (None if value is None else base64.b64encode(value).decode() if kind == "blob"
                         else str(value))
        return out

    def _add(self, op: str, before: Row | None, after: Row | None, full_load: bool = False) -> Message:
        if self.rng.random() < 0.3:
            self.position += 1
        self.id_ms += self.rng.randint(1, 50)
        self.increment += 1
        names = list(self.columns)
        body = {
            "version": 1, "id": 0 if full_load else Raw(f"{self.id_ms}{self.increment % 100000:05d}"),
            "sourceTimestamp": self.position + 2, "sourcePosition": "" if full_load else str(self.position),
            "safeSourcePosition": "" if full_load else str(self.position), "sourceTxid": "",
            "source": {"sourceType": "MySQL", "version": "OBMySQL"}, "operation": op,
            "objectName": f"{self.database}.{self.table}", "processTimestamps": [self.id_ms],
            "tags": {"pk_uk_info": json.dumps({"PRIMARY": self.key_columns})},
            "fields": [{"name": n, "dataTypeNumber": self.columns[n][0]} for n in names],
            "beforeImages": None if before is None else [self._entry(n, before.get(n)) for n in names],
            "afterImages": None if after is None else [self._entry(n, after.get(n)) for n in names],
        }
        msg = (None, dumps(body))
        self.messages.append(msg)
        return msg

    def insert(self, row: Row) -> Message:
        return self._add("INSERT", None, row)

    def full_load(self, row: Row) -> Message:
        return self._add("INIT", None, row, full_load=True)

    def update(self, before: Row, after: Row) -> Message:
        return self._add("UPDATE", before, after)

    def delete(self, row: Row) -> Message:
        return self._add("DELETE", row, None)

    def ddl(self, statement: str) -> Message:
        body = {"version": 1, "id": Raw(f"{self.id_ms}99999"), "sourceTimestamp": self.position,
                "sourcePosition": str(self.position), "safeSourcePosition": str(self.position),
                "sourceTxid": "", "source": {"sourceType": "MySQL", "version": "OBMySQL"},
                "operation": "DDL", "objectName": self.database, "processTimestamps": [self.id_ms],
                "tags": {}, "fields": None, "beforeImages": None, "afterImages": statement}
        msg = (None, dumps(body))
        self.messages.append(msg)
        return msg


@dataclass
class SmtTable:
    """debezium-smt messages: Debezium's ExtractNewRecordState output, deletes rewritten."""

    server: str
    database: str
    table: str
    key_columns: list[str]
    key_with_schema: bool = True
    tombstones: bool = True
    messages: list[Message] = field(default_factory=list)

    @property
    def topic(self) -> str:
        return f"{self.server}.{self.database}.{self.table}"

    def _key(self, row: Row) -> str:
        payload = {k: row[k] for k in self.key_columns}
        if self.key_with_schema:
            return dumps({"schema": {"type": "struct", "name": f"{self.topic}.Key"}, "payload": payload})
        return dumps(payload)

    def _add(self, msgs: list[Message]) -> Message:
        self.messages.extend(msgs)
        return msgs[0]

    def insert(self, row: Row) -> Message:
        return self._add([(self._key(row), dumps({**row, "__deleted": "false"}))])

    def update(self, before: Row, after: Row) -> Message:
        if any(text(before[k]) != text(after[k]) for k in self.key_columns):
            # Debezium writes a key change as a delete of the old key and a create of the new
            self.delete(before)
            return self.insert(after)
        return self._add([(self._key(after), dumps({**after, "__deleted": "false"}))])

    def delete(self, row: Row) -> Message:
        msgs: list[Message] = [(self._key(row), dumps({**row, "__deleted": "true"}))]
        if self.tombstones:
            msgs.append((self._key(row), None))
        return self._add(msgs)


EXACT = [Raw("9.999999999999999093266253"), Raw("10223372036854775806"), Raw("1.25E-10"), Raw("0E-24"),
         Raw("-0.000000000000000000000000000000000000000000000000000000000000001"),
         Raw("12345678901234567890123456789012345678901234567890123456789012345")]
STRINGS = ["plain", "quote \" and backslash \\", "escape \u003d <tag>", "emoji \U0001F600",
           "CJK \u4e2d\u6587", "tab\tnewline\n"]


def play_history(table: Any, seed: int, make_row: Any, changes: int = 60, initial: int = 0,
                 key_changes: bool = True, key_of: Any = None) -> dict[tuple, Row]:
    """Random inserts, updates (some changing the key), deletes and re-inserts on ``table``.

    ``initial`` rows are written first as full-load rows (``table.full_load``).
    ``make_row(rng, ident, version)`` builds a row; the result is the true final state as
    {key tuple: row}, the key tuple being ``key_of(row)`` (default: the key column values as
    text, in key order).
    """
    rng = random.Random(seed)
    key_of = key_of or (lambda row: tuple((k, text(row[k])) for k in table.key_columns))
    state: dict[int, Row] = {}
    next_id = 1
    for _ in range(initial):
        state[next_id] = make_row(rng, next_id, 0)
        table.full_load(state[next_id])
        next_id += 1
    for _ in range(changes):
        while next_id in state:  # a key re-used below may have been taken by a key change since
            next_id += 1
        action = rng.random()
        if not state or action < 0.35:
            row = make_row(rng, next_id, 0)
            state[next_id] = row
            next_id += 1
            table.insert(row)
        elif action < 0.8:
            ident = rng.choice(sorted(state))
            before = state[ident]
            after = make_row(rng, ident, int(text(before["version"])) + 1)
            if key_changes and rng.random() < 0.15:
                after = make_row(rng, next_id, int(text(before["version"])) + 1)
                del state[ident]
                ident = next_id
                next_id += 1
            state[ident] = after
            table.update(before, after)
        elif len(state) > 3:
            table.delete(state.pop(rng.choice(sorted(state))))
        if next_id > 20 and rng.random() < 0.2:
            next_id = rng.randint(1, 20)  # re-use deleted keys now and then
    return {key_of(row): row for row in state.values()}


def hard_delivery(topic: str, messages: list[Message], seed: int, batches: int = 3,
                  reorder_offsets: bool = True) -> list[list[str]]:
    """kcat -J batches delivered the hard way.

    Producer retries (a message again at a later offset), older changes produced at later
    offsets than newer ones (``reorder_offsets``; only for formats that carry their own
    sequence), a whole batch of older offsets delivered after newer ones, and exact repeats
    (the same offsets landed again).
    """
    rng = random.Random(seed)
    produced: list[Message] = []
    for msg in messages:
        produced.append(msg)
        if rng.random() < 0.1:
            produced.append(msg)  # a retry right after the original: still in source order
    if reorder_offsets:
        for i in range(0, len(produced) - 4, 4):
            window = produced[i:i + 4]
            rng.shuffle(window)
            produced[i:i + 4] = window
    lines = [envelope(topic, 0, offset, k, v) for offset, (k, v) in enumerate(produced)]
    cut = sorted(rng.sample(range(1, len(lines)), batches - 1))
    parts = [lines[a:b] for a, b in zip([0, *cut], [*cut, len(lines)], strict=True)]
    parts = [parts[-1], *parts[:-1]]  # the newest offsets arrive first
    for part in parts[1:]:
        part.extend(rng.sample(part, min(3, len(part))))
    return parts
