"""Scripted source-table histories with their true final state, for end-to-end checks.

A scenario plays random inserts, updates (some changing the key), deletes and re-inserts
against an in-memory copy of the source table, writes the vendor messages for each change, and
then delivers them the hard way: shuffled across Kafka offsets (older changes produced later),
some re-produced at new offsets, some envelope lines repeated, split over several batches.
"""

from __future__ import annotations

import random
from typing import Any

from cdc_messages import DebeziumTable, Raw, envelope

EXACT_VALUES = [Raw("9.999999999999999093266253"), Raw("10223372036854775806"),
                Raw("-0.000000000000000000000000000000000000000000000000000000000000001"),
                Raw("12345678901234567890123456789012345678901234567890123456789012345")]
STRINGS = ["plain", "quote \" and backslash \\", "escape \u003d <tag>", "emoji \U0001F600",
           "CJK \u4e2d\u6587", "tab\tnewline\n"]


def debezium_history(seed: int, keys: int = 25, changes: int = 160,
                     table: str = "accounts") -> tuple[DebeziumTable, dict[str, dict[str, Any]]]:
    """A Debezium table after ``changes`` random changes, and its true final state by pk JSON."""
    rng = random.Random(seed)
    dbz = DebeziumTable("shop", "sales", table, ["id"], with_schema=bool(seed % 2))
    state: dict[int, dict[str, Any]] = {}
    next_id = 1
    for _ in range(changes):
        action = rng.random()
        if not state or action < 0.35:
            row = {"id": next_id, "balance": rng.choice(EXACT_VALUES),
                   "note": rng.choice(STRINGS), "version": 0}
            next_id += 1
            state[row["id"]] = row
            dbz.insert(row)
        elif action < 0.75:
            before = state[rng.choice(sorted(state))]
            after = {**before, "balance": rng.choice(EXACT_VALUES),
                     "note": rng.choice(STRINGS), "version": before["version"] + 1}
            if rng.random() < 0.1:  # the key itself changes
                after["id"] = next_id
                next_id += 1
                del state[before["id"]]
            state[after["id"]] = after
            dbz.update(before, after)
        elif len(state) > 3:
            victim = state.pop(rng.choice(sorted(state)))
            dbz.delete(victim, tombstone=rng.random() < 0.7)
        if next_id > keys and rng.random() < 0.2:
            next_id = rng.randint(1, keys)  # re-use deleted keys now and then
            while next_id in state:
                next_id += 1
    truth = {f'{{"id":{k}}}': {c: str(v) for c, v in row.items()} for k, row in state.items()}
    return dbz, truth


def hard_delivery(dbz: DebeziumTable, seed: int, batches: int = 3) -> list[list[str]]:
    """kcat -J batches: offsets shuffled against source order, re-produced and repeated lines."""
    rng = random.Random(seed)
    messages = list(dbz.messages)
    produced = []
    for msg in messages:
        produced.append(msg)
        if rng.random() < 0.1:  # a producer retry: the same message again at a later offset
            produced.insert(rng.randint(len(produced), len(produced)), msg)
    # older changes produced later than newer ones: swap neighbours within small windows
    for i in range(0, len(produced) - 4, 4):
        window = produced[i:i + 4]
        rng.shuffle(window)
        produced[i:i + 4] = window
    lines = [envelope(dbz.topic, 0, offset, k, v) for offset, (k, v) in enumerate(produced)]
    cut = sorted(rng.sample(range(1, len(lines)), batches - 1))
    parts = [lines[a:b] for a, b in zip([0, *cut], [*cut, len(lines)], strict=True)]
    # the last batch goes first: a whole batch of older offsets arrives after newer ones
    parts = [parts[-1], *parts[:-1]]
    for part in parts[1:]:
        part.extend(rng.sample(part, min(3, len(part))))  # exact repeats: same offsets again
    return parts
