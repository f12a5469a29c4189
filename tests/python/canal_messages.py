"""Builders of canal-shaped messages: canal-json, drs-json, drs-json-c and cloudcanal-json.

:class:`CanalTable` writes the messages one vendor writes for one table, following that
vendor's rules (shared/formats: cloudcanal-mq.txt, oceanbase-oms.txt, huawei-drs.txt), and
keeps the true state of the table beside them. Values are Python strings or :class:`Raw` JSON
fragments (exact numbers written unquoted, as OMS's canal does).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_messages import Raw

#: Gson's HTML-safe escapes, as DRS writes them (its document's table, `<` corrected).
DRS_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "=": "\\u003d", "'": "\\u0027"}

#: The field names of each flavour of the canal shape.
FLAVOURS: dict[str, dict[str, str]] = {
    "canal-json": {"type": "type", "old": "old", "database": "database", "keys": "pkNames",
                   "time": "es", "seq": "id", "names": "mysqlType", "codes": "sqlType"},
    "drs-json": {"type": "type", "old": "old", "database": "database", "keys": "pkNames",
                 "time": "es", "seq": "id", "names": "mysqlType", "codes": "sqlType"},
    "cloudcanal-json": {"type": "action", "old": "before", "database": "db", "keys": "pks",
                        "time": "execTs", "seq": "bid", "names": "dbValType", "codes": "jdbcType"},
}
FLAVOURS["drs-json-c"] = FLAVOURS["drs-json"]


def dumps(value: Any, drs_escapes: bool = False) -> str:
    """JSON text of ``value``; :class:`Raw` fragments verbatim; DRS's escapes when asked."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{dumps(k, drs_escapes)}:{dumps(v, drs_escapes)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v, drs_escapes) for v in value) + "]"
    text = json.dumps(value, ensure_ascii=False)
    if drs_escapes and isinstance(value, str):
        for char, escape in DRS_ESCAPES.items():
            text = text.replace(char, escape)
    return text


def pk_json(row: dict[str, Any], keys: list[str]) -> str:
    """The gold ``pk`` of ``row``: a compact JSON object of the key columns in key order."""
    return "{" + ",".join(f"{json.dumps(k)}:{dumps(row[k])}" for k in keys) + "}"


def as_text(row: dict[str, Any]) -> dict[str, str | None]:
    """A row as gold decodes it (numbers as their exact text)."""
    return {c: None if v is None else str(v) for c, v in row.items()}


@dataclass
class CanalTable:
    """One source table written as canal-shaped messages, with its true current state."""

    fmt: str
    database: str
    table: str
    key_columns: list[str]
    types: dict[str, tuple[str, int]]
    topic: str = ""
    seq: int = 27000
    time_ms: int = 1_700_000_000_000
    partial_old: bool = True
    messages: list[tuple[str | None, str | None]] = field(default_factory=list)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.topic = self.topic or f"{self.fmt}.{self.database}.{self.table}".replace(" ", "_")

    @property
    def f(self) -> dict[str, str]:
        return FLAVOURS[self.fmt]

    def _message(self, op: str, data: list | None, old: list | None, ddl: str | None = None,
                 extra: dict[str, Any] | None = None) -> str:
        """One message; the sequence and time move on (several changes may share a second)."""
        self.seq += 1
        self.time_ms += random.Random(self.seq).choice([0, 0, 1000])
        f = self.f
        msg: dict[str, Any] = {"data": data, f["database"]: self.database}
        if self.fmt == "cloudcanal-json":
            msg.update({"schema": self.database, "entryType": "ROWDATA",
                        "sendTs": Raw(str(self.time_ms + 377))})
        msg.update({
            "table": self.table, f["type"]: op, "isDdl": Raw("true" if ddl else "false"),
            "sql": ddl or "", f["keys"]: [] if ddl else self.key_columns,
            f["names"]: None if ddl else {c: t for c, (t, _) in self.types.items()},
            f["codes"]: None if ddl else {c: Raw(str(code)) for c, (_, code) in self.types.items()},
            f["old"]: old, f["time"]: self._time(), f["seq"]: Raw(str(self.seq)),
        })
        if self.fmt != "cloudcanal-json":
            msg["ts"] = Raw(str(self.time_ms + 1072))
        msg.update(extra or {})
        return dumps(msg, drs_escapes=self.fmt.startswith("drs-json"))

    def _time(self) -> Any:
        # DRS JSON-C writes its times as strings
        return str(self.time_ms) if self.fmt == "drs-json-c" else Raw(str(self.time_ms))

    def _emit(self, value: str) -> tuple[None, str]:
        self.messages.append((None, value))
        return (None, value)

    def _pk(self, row: dict[str, Any]) -> str:
        return pk_json(row, self.key_columns) if self.key_columns else pk_json(row, list(row))

    def insert(self, *rows: dict[str, Any]) -> tuple[None, str]:
        for row in rows:
            self.state[self._pk(row)] = dict(row)
        return self._emit(self._message("INSERT", list(rows), None))

    def update(self, *changes: tuple[dict[str, Any], dict[str, Any]]) -> tuple[None, str]:
        """UPDATE of several rows: (before, after) each; canal's old = the changed columns."""
        old = []
        for before, after in changes:
            if self.partial_old and self.fmt == "canal-json":
                old.append({c: v for c, v in before.items() if after.get(c) != v or c not in after})
            else:
                old.append(dict(before))
            self.state.pop(self._pk(before), None)
            self.state[self._pk(after)] = dict(after)
        return self._emit(self._message("UPDATE", [a for _, a in changes], old))

    def delete(self, *rows: dict[str, Any]) -> tuple[None, str]:
        for row in rows:
            self.state.pop(self._pk(row), None)
        if self.fmt == "drs-json":  # the deleted rows are in old
            return self._emit(self._message("DELETE", None, list(rows)))
        return self._emit(self._message("DELETE", list(rows), None))

    def ddl(self, statement: str, op: str = "ALTER") -> tuple[None, str]:
        if self.fmt.startswith("drs-json"):
            op = "DDL"
        return self._emit(self._message(op, None, None, ddl=statement))

    def truncate(self) -> tuple[None, str]:
        self.state.clear()
        return self._emit(self._message("TRUNCATE", None, None, ddl=f"TRUNCATE TABLE {self.table}"))

    def transaction_end(self) -> tuple[None, str]:
        """CloudCanal: an entryType TRANSACTIONEND record."""
        return self._emit(self._message("INSERT", [], None, extra={"entryType": "TRANSACTIONEND"}))

    def truth(self) -> dict[str, dict[str, str | None]]:
        return {pk: as_text(row) for pk, row in self.state.items()}


EXACT = [Raw("9.999999999999999093266253"), Raw("10223372036854775806"),
         Raw("12345678901234567890123456789012345678901234567890123456789012345"),
         Raw("-0.00000000000000000000000000000000000000000000000000000000000001")]
STRINGS = ["plain", "quote \" and backslash \\", "escape < > & = ' (DRS)", "emoji \U0001F600",
           "CJK \u4e2d\u6587", "tab\tnewline\n", "9.999999999999999093266253"]
TYPES = {"id": ("bigint", -5), "amount": ("decimal(65,30)", 3), "note": ("varchar(255)", 12),
         "version": ("int", 4)}


def canal_history(fmt: str, seed: int, changes: int = 70) -> CanalTable:
    """Random multi-row inserts, partial updates (some changing the key), deletes and DDL."""
    rng = random.Random(seed)
    # one database per format: gold keys on (database, schema, table, key), not on the format
    t = CanalTable(fmt, "shop_" + fmt.replace("-", "_"), "orders", ["id"], TYPES,
                   seq=rng.randint(100, 5000))
    exact = fmt == "canal-json"  # OMS's canal writes bare numbers; the others strings
    live: dict[int, dict[str, Any]] = {}
    next_id = 1

    def value(i: int) -> Any:
        return Raw(str(i)) if exact else str(i)

    for _ in range(changes):
        action = rng.random()
        if not live or action < 0.3:
            rows = []
            for _ in range(rng.randint(1, 3)):
                amount = rng.choice(EXACT) if exact else str(rng.choice(EXACT))
                rows.append({"id": value(next_id), "amount": amount,
                             "note": rng.choice(STRINGS), "version": value(0)})
                live[next_id] = rows[-1]
                next_id += 1
            t.insert(*rows)
        elif action < 0.7:
            pairs = []
            for key in rng.sample(sorted(live), min(len(live), rng.randint(1, 2))):
                before = live.pop(key)
                after = {**before, "note": rng.choice(STRINGS),
                         "version": value(int(str(before["version"])) + 1)}
                if rng.random() < 0.15:  # the key itself changes
                    after["id"] = value(next_id)
                    key = next_id
                    next_id += 1
                live[key] = after
                pairs.append((before, after))
            t.update(*pairs)
        elif action < 0.93 and len(live) > 2:
            keys = rng.sample(sorted(live), min(len(live) - 1, rng.randint(1, 2)))
            t.delete(*[live.pop(k) for k in keys])
        else:
            t.ddl(f"ALTER TABLE orders ADD COLUMN c{rng.randint(1, 99)} INT")
    return t


def paimon_messages(path: Path) -> list[str]:
    """The messages of one of Paimon's canal sample files: after the license block, one per line (or spread)."""
    text = path.read_text(encoding="utf-8")
    body = text[text.index("*/") + 2:] if text.lstrip().startswith("/*") else text
    messages, pending = [], ""
    for line in body.splitlines():
        if not line.strip():
            continue
        pending = f"{pending} {line.strip()}" if pending else line.strip()
        try:
            json.loads(pending)
        except ValueError:
            continue
        messages.append(pending)
        pending = ""
    return messages + ([pending] if pending else [])
