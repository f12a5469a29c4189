"""Seeds load exactly what their CSV says, in one Delta commit per seed.

dbt-spark binds seed values by formatting them into the statement, so in a process build an
empty cell became the string 'None' (silver.cdc_parsed then said control_kind 'None' for every
change, op 'None' for every control record) and a quote would end its string. The project loads
seeds with literals of its own (macros/cdc_seed_if_changed.sql): an empty cell is NULL, and
the table is created with its rows and its checksum in one statement.
"""

from __future__ import annotations

import csv

from conftest import PROJECT


def _csv_rows(name: str) -> list[tuple]:
    with (PROJECT / "seeds" / f"{name}.csv").open(encoding="utf-8", newline="") as file:
        return sorted(tuple(cell if cell != "" else None for cell in row) for row in list(csv.reader(file))[1:])


def test_seeds_hold_their_csv_with_empty_cells_as_null(lakehouse) -> None:
    lakehouse.build("--select", "cdc_op_codes", "cdc_key_overrides", "--full-refresh", tests=False)

    for name in ("cdc_op_codes", "cdc_key_overrides"):
        table = f"cdc_config.{name}"
        columns = lakehouse.spark.table(table).columns
        stored = sorted(tuple(r) for r in lakehouse.spark.sql(f"select {', '.join(columns)} from {table}").collect())
        assert stored == _csv_rows(name)
        # one commit: created with its rows and its checksum, nothing after
        history = lakehouse.rows(f"describe history {table}")
        assert [h["operation"] for h in history] == ["CREATE TABLE AS SELECT"], history

    # what the empty cells mean downstream: control records have no op, changes no control kind
    kinds = lakehouse.rows(
        "select record_kind, count(op) as ops, count(control_kind) as kinds from cdc_config.cdc_op_codes group by 1")
    assert {r["record_kind"]: (r["ops"] > 0, r["kinds"] > 0) for r in kinds} == {
        "change": (True, False), "control": (False, True)}
