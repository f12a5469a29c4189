"""Synthetic CDC topics for the benchmark: N changes over many tables, skewed keys, several formats.

Keys follow a Zipf-like skew (a few hot rows take most updates, as in real OLTP tables); every
table gets inserts first, then a mix of updates (70%), inserts (20%) and deletes (10%).
Messages are written as ``kcat -C -J`` lines, one topic per (format, table), offsets in
production order, so the file can be landed with ``lakehouse ingest --from-file`` or produced
to Kafka as is.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

FORMATS = ("debezium-json", "canal-json")


def _debezium(db: str, table: str, op: str, before: dict | None, after: dict | None,
              pos: int) -> tuple[str, str]:
    row = after or before
    key = '{"id":%d}' % row["id"]
    src = ('{"version":"2.5.0.Final","connector":"mysql","name":"bench","ts_ms":%d,'
           '"db":"%s","table":"%s","file":"mysql-bin.000001","pos":%d,"row":0}'
           % (1_700_000_000_000 + pos, db, table, pos))
    value = '{"payload":{"before":%s,"after":%s,"source":%s,"op":"%s","ts_ms":%d}}' % (
        _row(before), _row(after), src, op, 1_700_000_000_000 + pos)
    return key, value


def _canal(db: str, table: str, op: str, before: dict | None, after: dict | None,
           pos: int) -> tuple[str | None, str]:
    kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
    data = after if op != "d" else before
    old = "null"
    if op == "u":
        old = "[{\"balance\":\"%s\"}]" % before["balance"]
    value = ('{"data":[%s],"database":"%s","es":%d,"id":%d,"isDdl":false,'
             '"mysqlType":{"id":"bigint","balance":"decimal(30,10)","name":"varchar(64)",'
             '"version":"int"},"old":%s,"pkNames":["id"],"sql":"","table":"%s",'
             '"ts":%d,"type":"%s"}' % (_canal_row(data), db, 1_700_000_000_000 + pos, pos, old,
                                       table, 1_700_000_000_000 + pos, kind))
    return None, value


def _row(row: dict | None) -> str:
    if row is None:
        return "null"
    return '{"id":%d,"balance":%s,"name":"%s","version":%d}' % (
        row["id"], row["balance"], row["name"], row["version"])


def _canal_row(row: dict) -> str:
    return '{"id":"%d","balance":"%s","name":"%s","version":"%d"}' % (
        row["id"], row["balance"], row["name"], row["version"])


def changes(total: int, tables: int, seed: int, start_pos: int = 0,
            state: dict | None = None) -> Iterator[tuple[str, str, str, str | None, str]]:
    """(format, topic, table, key, value) for ``total`` changes; ``state`` carries on a history."""
    rng = random.Random(seed)
    state = state if state is not None else {}
    pos = start_pos
    for i in range(total):
        t = i % tables
        fmt = FORMATS[t % len(FORMATS)]
        db, table = "bench", f"t{t:03d}"
        rows = state.setdefault(table, {"rows": {}, "next": 1})
        live = rows["rows"]
        roll = rng.random()
        pos += 1
        if not live or roll < 0.2:
            row = {"id": rows["next"], "balance": f"{rng.randint(0, 10**12)}.{rng.randint(0, 10**10):010d}",
                   "name": f"n{rng.randint(0, 10**6)}", "version": 0}
            rows["next"] += 1
            live[row["id"]] = row
            op, before, after = "c", None, row
        else:
            ids = list(live)
            # Zipf-like skew: low ranks (hot rows) are picked far more often
            victim = ids[min(len(ids) - 1, int(rng.paretovariate(1.2)) - 1)]
            before = live[victim]
            if roll < 0.9:
                after = {**before, "balance": f"{rng.randint(0, 10**12)}.{rng.randint(0, 10**10):010d}",
                         "version": before["version"] + 1}
                live[victim] = after
                op = "u"
            else:
                del live[victim]
                op, after = "d", None
        build = _debezium if fmt == "debezium-json" else _canal
        key, value = build(db, table, op, before, after, pos)
        yield fmt, f"bench.{fmt}.{table}", table, key, value


def write_kcat(path: Path, rows: Iterator[tuple[str, str, str, str | None, str]],
               offsets: dict[str, int]) -> dict[str, int]:
    """Write kcat -J lines, offsets continuing from ``offsets``; returns records per format."""
    per_format: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as out:
        for fmt, topic, _table, key, value in rows:
            offset = offsets.get(topic, 0)
            offsets[topic] = offset + 1
            per_format[fmt] = per_format.get(fmt, 0) + 1
            out.write(json.dumps({"topic": topic, "partition": 0, "offset": offset,
                                  "ts": 1_700_000_000_000, "key": key, "payload": value}))
            out.write("\n")
    return per_format


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("bench/out/changes.jsonl"))
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    counts = write_kcat(args.out, changes(args.changes, args.tables, seed=1), {})
    print(f"wrote {sum(counts.values())} records to {args.out}: {counts}")


if __name__ == "__main__":
    main()
