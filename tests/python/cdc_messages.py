"""Builders of vendor messages and kcat -J envelope lines, for tests, samples and the benchmark.

Values are passed as *JSON text fragments* where exactness matters (``"9.99...253"`` is
written into the message unquoted), so the messages carry numbers no float could hold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class Raw(str):
    """A JSON fragment written into a message verbatim (an exact number, say)."""


def dumps(value: Any) -> str:
    """JSON text of ``value`` where :class:`Raw` fragments stay verbatim."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def envelope(topic: str, partition: int, offset: int, key: str | None, payload: str | None,
             ts: int = 1_700_000_000_000) -> str:
    """One ``kcat -C -J`` line."""
    return json.dumps(
        {"topic": topic, "partition": partition, "offset": offset, "tstype": "create",
         "ts": ts, "broker": 0, "key": key, "payload": payload},
        ensure_ascii=False,
    )


@dataclass
class DebeziumTable:
    """Writes Debezium MySQL change events for one table, binlog positions increasing."""

    server: str
    database: str
    table: str
    key_columns: list[str]
    with_schema: bool = False
    binlog_file: int = 3
    position: int = 1000
    messages: list[tuple[str | None, str | None]] = field(default_factory=list)

    @property
    def topic(self) -> str:
        return f"{self.server}.{self.database}.{self.table}"

    def _key(self, row: dict[str, Any]) -> str:
        return dumps({"schema": {"type": "struct", "name": f"{self.topic}.Key"},
                      "payload": {k: row[k] for k in self.key_columns}})

    def _value(self, op: str, before: dict | None, after: dict | None) -> str:
        self.position += 100
        payload = {
            "before": before, "after": after,
            "source": {"version": "2.5.0.Final", "connector": "mysql", "name": self.server,
                       "ts_ms": 1_700_000_000_000 + self.position, "snapshot": "false",
                       "db": self.database, "table": self.table, "server_id": 1,
                       "file": f"mysql-bin.{self.binlog_file:06d}", "pos": self.position,
                       "row": 0},
            "op": op, "ts_ms": 1_700_000_000_500 + self.position, "transaction": None,
        }
        if self.with_schema:
            return dumps({"schema": {"type": "struct", "name": f"{self.topic}.Envelope"},
                          "payload": payload})
        return dumps({"payload": payload})

    def insert(self, row: dict[str, Any]) -> tuple[str, str]:
        msg = (self._key(row), self._value("c", None, row))
        self.messages.append(msg)
        return msg

    def update(self, before: dict[str, Any], after: dict[str, Any]) -> tuple[str, str]:
        msg = (self._key(after), self._value("u", before, after))
        self.messages.append(msg)
        return msg

    def delete(self, row: dict[str, Any], tombstone: bool = True) -> list[tuple[str, str | None]]:
        msgs: list[tuple[str, str | None]] = [(self._key(row), self._value("d", row, None))]
        if tombstone:
            msgs.append((self._key(row), None))
        self.messages.extend(msgs)
        return msgs

    def envelopes(self, messages: list[tuple[str | None, str | None]] | None = None,
                  first_offset: int = 0) -> list[str]:
        """kcat -J lines for ``messages`` (default: all written so far), offsets from ``first_offset``."""
        msgs = self.messages if messages is None else messages
        return [envelope(self.topic, 0, first_offset + i, k, v) for i, (k, v) in enumerate(msgs)]
