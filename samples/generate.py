"""Writes samples/debezium_inventory.jsonl, the demo's topic dump (kcat -J lines).

Run from the repo root: .venv/bin/python samples/generate.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

from cdc_messages import DebeziumTable, Raw  # noqa: E402

customers = DebeziumTable("dbserver1", "inventory", "customers", ["id"], with_schema=True)
products = DebeziumTable("dbserver1", "inventory", "products", ["id"])

c1 = {"id": 1001, "first_name": "Sally", "last_name": "Thomas", "email": "sally.thomas@acme.com"}
c2 = {"id": 1002, "first_name": "George", "last_name": "Bailey", "email": "gbailey@foobar.com"}
c3 = {"id": 1003, "first_name": "Edward", "last_name": "Walker", "email": "ed@walker.com"}
c4 = {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
for row in (c1, c2, c3, c4):
    customers.insert(row)
customers.update(c1, {**c1, "email": "sally@example.com"})
customers.delete(c3)
customers.update(c4, {**c4, "id": 1005})  # the key changes: 1004 goes, 1005 comes

p1 = {"id": 101, "name": "scooter", "price": Raw("9.999999999999999093266253"),
      "stock": Raw("10223372036854775806"), "note": "Small 2-wheel scooter \u00e9 \U0001F6F4"}
p2 = {"id": 102, "name": "car battery", "price": Raw("8.10"), "stock": Raw("3"),
      "note": "12V \"heavy\" battery"}
products.insert(p1)
products.insert(p2)
products.update(p2, {**p2, "price": Raw("7.95")})

lines = customers.envelopes() + products.envelopes()
out = Path(__file__).with_name("debezium_inventory.jsonl")
out.write_text("\n".join(lines) + "\n", encoding="utf-8")
print(f"wrote {len(lines)} records to {out}")
