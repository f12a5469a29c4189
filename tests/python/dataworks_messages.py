"""Messages of the "dataworks" group of formats, written by each vendor's rules, for tests.

Formats: ``dataworks`` (DataWorks real-time sync), ``dataworks-v2`` (OceanBase OMS DataWorks 2.0),
``maxwell-json``, ``ogg-json`` (Oracle GoldenGate JSON formatter), ``aws-dms-json`` (AWS DMS).

- :func:`history` plays random changes against an in-memory source table and keeps its true
  final state; one writer per format turns each change into that vendor's Kafka records
  (``(key, value)`` pairs of JSON text, exact numbers through :class:`cdc_messages.Raw`).
- :func:`hard_delivery` delivers them the hard way (older changes produced later, re-produced
  messages, several batches) and :func:`envelopes` numbers them as Kafka records.
- :func:`fixture_messages` reads the vendor-document fixtures of tests/fixtures/<format>/;
  :func:`paimon_messages` reads Apache Paimon's sample files (license header, then messages,
  some spread over several lines).
"""

from __future__ import annotations

import base64
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_messages import Raw, dumps, envelope

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

Message = tuple[str | None, str | None]
"""One Kafka record: (key, value) as text."""

EXACT_DECIMALS = [Raw("9.999999999999999093266253"),
                  Raw("12345678901234567890123456789012345678901234567890.123456789012345"),
                  Raw("-0.000000000000000000000000000001"), Raw("1.100000"), Raw("0E-24")]
BIG_INTS = [Raw("10223372036854775806"), Raw("-9223372036854775808"), Raw("7")]
STRINGS = ["plain", "quote \" and backslash \\", Raw('"escape \\u003d <tag>"'), "emoji \U0001F600",
           "CJK \u4e2d\u6587", "tab\tnewline\n"]
#: DataWorks DATE values: epoch milliseconds, negative before 1970 (SPEC known slips)
DATES = [Raw("-2208988800000"), Raw("-86400000"), Raw("0"), Raw("1620457896000")]


def text_value(value: Any) -> str | None:
    """A value as gold's row JSON gives it back when decoded with parse_float/parse_int=str."""
    if value is None:
        return None
    if isinstance(value, Raw):
        return json.loads(str(value), parse_float=str, parse_int=str) if value.startswith('"') else str(value)
    return str(value)


def decoded(row: dict[str, Any]) -> dict[str, str | None]:
    return {c: text_value(v) for c, v in row.items()}


# --- a source table's history -------------------------------------------------------------


@dataclass
class Change:
    """One source change: kind load (full-load row) / insert / update / delete / truncate."""

    kind: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None


def history(seed: int, key: str = "id", steps: int = 30, full_load: int = 3,
            key_changes: bool = True, truncate_at: int | None = None
            ) -> tuple[list[Change], dict[str, dict[str, Any]]]:
    """Random changes of one table and its true final state {key value: row}."""
    rng = random.Random(seed)
    state: dict[str, dict[str, Any]] = {}
    changes: list[Change] = []
    free = [str(k) for k in range(1, 200)]

    def row(k: str, version: int) -> dict[str, Any]:
        return {key: Raw(k), "amount": rng.choice(EXACT_DECIMALS), "note": rng.choice(STRINGS),
                "born": rng.choice(DATES), "big": rng.choice(BIG_INTS), "version": Raw(str(version))}

    for _ in range(full_load):
        r = row(free.pop(0), 0)
        state[str(r[key])] = r
        changes.append(Change("load", None, r))
    for step in range(steps):
        action = rng.random()
        if step == truncate_at:
            changes.append(Change("truncate"))
            free.extend(state)
            state.clear()
        elif not state or action < 0.3:
            r = row(free.pop(rng.randrange(min(3, len(free)))), 0)
            state[str(r[key])] = r
            changes.append(Change("insert", None, r))
        elif action < 0.8:
            before = state.pop(rng.choice(sorted(state)))
            after = {**before, "amount": rng.choice(EXACT_DECIMALS), "note": rng.choice(STRINGS),
                     "version": Raw(str(int(before["version"]) + 1))}
            if key_changes and rng.random() < 0.2:
                after[key] = Raw(free.pop(0))
                free.append(str(before[key]))
            state[str(after[key])] = after
            changes.append(Change("update", before, after))
        elif len(state) > 2:
            gone = state.pop(rng.choice(sorted(state)))
            free.insert(0, str(gone[key]))
            changes.append(Change("delete", gone, None))
    return changes, state


def hard_delivery(messages: list[Message], seed: int, batches: int = 2,
                  moved: float = 0.15, repeated: float = 0.1) -> list[list[Message]]:
    """Messages in delivery order, split into batches: some produced later than newer ones,
    some produced twice (a producer retry: the same message at a new offset)."""
    rng = random.Random(seed)
    order = list(messages)
    for _ in range(int(len(order) * moved)):
        i = rng.randrange(len(order))
        order.insert(rng.randrange(i, len(order)) + 1, order.pop(i))
    for _ in range(int(len(order) * repeated)):
        i = rng.randrange(len(order))
        order.insert(rng.randrange(i, len(order)) + 1, order[i])
    cuts = sorted(rng.sample(range(1, len(order)), batches - 1))
    return [order[a:b] for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True)]


@dataclass
class Topic:
    """Numbers the messages of one topic (partition 0) as kcat -J envelope lines."""

    name: str
    next_offset: int = 0

    def envelopes(self, messages: list[Message]) -> list[str]:
        lines = []
        for key, value in messages:
            lines.append(envelope(self.name, 0, self.next_offset, key, value))
            self.next_offset += 1
        return lines


# --- writers, one per format ---------------------------------------------------------------


@dataclass
class DataWorksWriter:
    """DataWorks real-time sync messages of one table (shared/formats/dataworks-realtime-sync.txt).

    ``key``: the primary key column, or the hidden row-id column when ``primary_key`` is False,
    or None for a table with neither (a multiset). ``split``: the fraction of updates written as
    two records (UPDATE_BEFOR + UPDATE_AFTER sharing a sequenceId).
    """

    db: str
    table: str
    key: str | None = "id"
    primary_key: bool = True
    split: float = 0.5
    seed: int = 0
    sequence: int = 1620457642589000000
    event_time: int = 1620457896000
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _columns(self, row: dict[str, Any]) -> list[dict[str, str]]:
        types = {"amount": "DOUBLE", "note": "STRING", "born": "DATE", "blob": "BYTES"}
        return [{"name": c, "type": types.get(c, "LONG")} for c in row]

    @staticmethod
    def image(row: dict[str, Any] | None) -> dict[str, Any] | None:
        """The row as DataWorks writes it: DECIMAL as a JSON string under DOUBLE, BYTES base64."""
        if row is None:
            return None
        out = dict(row)
        if "amount" in out:
            out["amount"] = str(out["amount"])
        out["blob"] = base64.b64encode(str(row.get("note", "")).encode()).decode()
        return out

    def message(self, op: str, before: dict | None, after: dict | None, sequence: str | None = None,
                ddl: str | None = None) -> str:
        if sequence is None:
            self.sequence += 1
            sequence = str(self.sequence)
        self.event_time += 1000
        full_load = sequence == "-1"
        sample = self.image(after or before)
        return dumps({
            "schema": {
                "dataColumn": self._columns(sample) if sample else None,
                "primaryKey": [self.key] if self.key and self.primary_key else None,
                "source": {"dbType": "MySQL", "dbName": self.db, "tableName": self.table},
            },
            "payload": {
                "before": {"dataColumn": self.image(before)} if before is not None else None,
                "after": {"dataColumn": self.image(after)} if after is not None else None,
                "sequenceId": sequence,
                "timestamp": {"eventTime": -1 if full_load else self.event_time,
                              "systemTime": self.event_time + 900,
                              "checkpointTime": -1 if full_load else self.event_time},
                "op": op,
                "ddl": {"text": ddl, "ddlMeta": "AAAA"} if ddl else None,
            },
            "version": "0.0.1",
        })

    def split_update(self, before: dict, after: dict) -> tuple[Message, Message]:
        """The two records of one update, sharing a sequenceId."""
        self.sequence += 1
        seq = str(self.sequence)
        return ((None, self.message("UPDATE_BEFOR", before, None, seq)),
                (None, self.message("UPDATE_AFTER", None, after, seq)))

    def render(self, change: Change) -> list[Message]:
        if change.kind == "load":
            return [(None, self.message("INSERT", None, change.after, "-1"))]
        if change.kind == "insert":
            return [(None, self.message("INSERT", None, change.after))]
        if change.kind == "delete":
            return [(None, self.message("DELETE", change.before, None))]
        if change.kind == "update" and self.rng.random() < self.split:
            return list(self.split_update(change.before, change.after))
        if change.kind == "update":
            return [(None, self.message("UPDATE_AFTER", change.before, change.after))]
        raise ValueError(change.kind)

    def heartbeat(self) -> Message:
        self.event_time += 1000
        return (None, dumps({
            "schema": {"dataColumn": None, "primaryKey": None, "source": None},
            "payload": {"before": None, "after": None, "sequenceId": None,
                        "timestamp": {"eventTime": self.event_time, "checkpointTime": self.event_time},
                        "op": "MHEARTBEAT", "ddl": None},
            "version": "0.0.1",
        }))


@dataclass
class DataWorksV2Writer:
    """OMS DataWorks 2.0 messages of one table keyed by ``key`` (schema.pk), scn increasing."""

    db: str
    table: str
    key: str = "id"
    scn: int = 900000
    event_time: int = 1647581000000

    def message(self, op: str, before: dict | None, after: dict | None, ddl: str | None = None) -> str:
        self.scn += 7
        self.event_time += 1000
        sample = after or before
        types = {"amount": "DECIMAL", "note": "VARCHAR", "born": "BIGINT"}
        return dumps({
            "version": "2.0",
            "schema": {
                "source": {"dbType": "ob_mysql", "dbVersion": None, "dbName": self.db, "schema": None,
                           "table": self.table},
                "column": [{"name": c, "type": types.get(c, "BIGINT")} for c in sample] if sample else None,
                "pk": [self.key] if sample else None,
            },
            "payload": {
                "before": {"data": before} if before is not None else None,
                "after": {"data": after} if after is not None else None,
                "op": op,
                "timestamp": {"eventTime": self.event_time, "systemTime": self.event_time + 795,
                              "checkpointTime": self.event_time // 1000},
                "ddl": {"text": ddl} if ddl else None,
                "scn": str(self.scn),
            },
            "extend": {"load_fm": "test"},
        })

    def render(self, change: Change) -> list[Message]:
        op = {"load": "INSERT", "insert": "INSERT", "update": "UPDATE", "delete": "DELETE",
              "truncate": "TRUNCATE"}[change.kind]
        return [(None, self.message(op, change.before, change.after))]

    def heartbeat(self) -> Message:
        self.event_time += 1000
        return (None, dumps({"version": "2.0", "payload": {"timestamp": {"eventTime": self.event_time},
                                                           "op": "HEARTBEAT"}}))


@dataclass
class MaxwellWriter:
    """Maxwell rows with output_binlog_position, keyed by Maxwell's default hash Kafka key."""

    database: str
    table: str
    key: str = "id"
    binlog_file: int = 3
    position: int = 4000
    xid: int = 7000
    ts: int = 1596684883

    def message(self, kind: str, data: dict, old: dict | None = None) -> Message:
        self.position += 250
        self.xid += 1
        self.ts += 1
        if self.position > 6000:  # binlog rotation: the offset restarts, the file number grows
            self.binlog_file += 1
            self.position = 154
        value: dict[str, Any] = {
            "database": self.database, "table": self.table, "type": kind, "ts": self.ts,
            "xid": self.xid, "commit": True,
            "position": f"mysql-bin.{self.binlog_file:06d}:{self.position}",
            "server_id": 1, "thread_id": 42, "data": data,
        }
        if old is not None:
            value["old"] = old
        key = dumps({"database": self.database, "table": self.table, f"pk.{self.key}": data[self.key]})
        return (key, dumps(value))

    def render(self, change: Change) -> list[Message]:
        if change.kind == "load":
            return [self.message("bootstrap-insert", change.after)]
        if change.kind == "insert":
            return [self.message("insert", change.after)]
        if change.kind == "delete":
            return [self.message("delete", change.before)]
        old = {c: v for c, v in change.before.items() if change.after.get(c) != v}
        return [self.message("update", change.after, old)]


@dataclass
class OggWriter:
    """GoldenGate JSON operations with primary_keys and compressed updates (after = key +
    changed columns, before = full image)."""

    table: str
    key: str = "ID"
    pos: int = 10_000_000_000_000
    op_ts: int = 1_589_384_406

    def message(self, op_type: str, before: dict | None, after: dict | None) -> Message:
        self.pos += 1234
        self.op_ts += 1
        value: dict[str, Any] = {
            "table": self.table, "op_type": op_type,
            "op_ts": _utc(self.op_ts) + ".000000", "current_ts": _utc(self.op_ts + 5).replace(" ", "T") + ".766000",
            "pos": f"{self.pos:020d}", "primary_keys": [self.key],
        }
        if before is not None:
            value["before"] = before
        if after is not None:
            value["after"] = after
        return (None, dumps(value))

    def render(self, change: Change) -> list[Message]:
        if change.kind in ("load", "insert"):
            return [self.message("I", None, change.after)]
        if change.kind == "delete":
            return [self.message("D", change.before, None)]
        compressed = {c: v for c, v in change.after.items()
                      if c == self.key or change.before.get(c) != v}
        return [self.message("U", change.before, compressed)]


@dataclass
class DmsWriter:
    """AWS DMS data records; before images alternately as `before-image` and as BI_ fields."""

    schema: str
    table: str
    micros: int = 1_730_032_743_210_671
    transaction: int = 670014899490
    updates: int = 0

    def message(self, operation: str, data: dict, before: dict | None = None) -> Message:
        self.micros += 1_000_017
        self.transaction += 3
        value: dict[str, Any] = {"data": dict(data)}
        if before is not None and self.updates % 2:
            value["data"].update({f"BI_{c}": v for c, v in before.items()})
        elif before is not None:
            value["before-image"] = before
        value["metadata"] = {
            "timestamp": _utc_micros(self.micros), "record-type": "data", "operation": operation,
            "partition-key-type": "schema-table", "schema-name": self.schema,
            "table-name": self.table, "transaction-id": Raw(str(self.transaction)),
        }
        return (None, dumps(value))

    def render(self, change: Change) -> list[Message]:
        if change.kind == "load":
            return [self.message("load", change.after)]
        if change.kind == "insert":
            return [self.message("insert", change.after)]
        if change.kind == "delete":
            return [self.message("delete", change.before)]
        self.updates += 1
        return [self.message("update", change.after, change.before)]


def _utc(seconds: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _utc_micros(micros: int) -> str:
    return _utc(micros // 1_000_000).replace(" ", "T") + f".{micros % 1_000_000:06d}Z"


# --- vendor-document fixtures and Paimon samples --------------------------------------------


def compact(text: str) -> str:
    """A pretty-printed JSON message on one line, every token unchanged (JSON strings cannot
    hold a raw newline, so every line break is whitespace between tokens)."""
    return " ".join(line.strip() for line in text.strip().splitlines())


def fixture_messages(fmt: str) -> tuple[list[tuple[str, Message]], dict[str, Any]]:
    """The fixture messages of ``fmt`` in file order as (file name, (key, value)), and the
    expected outcomes (numbers decoded as their exact text)."""
    folder = FIXTURES / fmt
    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"),
                          parse_float=str, parse_int=str)
    messages = []
    for path in sorted((folder / "messages").glob("*.json")):
        key = expected["messages"][path.name].get("kafka_key")
        messages.append((path.name, (key, compact(path.read_text(encoding="utf-8")))))
    return messages, expected


def paimon_messages(path: Path) -> list[str]:
    """The messages of one Paimon sample file: the /* license */ block skipped, messages spread
    over several lines joined (their exact text kept)."""
    text = re.sub(r"^\s*/\*.*?\*/", "", path.read_text(encoding="utf-8"), count=1, flags=re.S)
    decoder = json.JSONDecoder()
    messages, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return messages
        _, end = decoder.raw_decode(text, i)
        messages.append(compact(text[i:end]))
        i = end
