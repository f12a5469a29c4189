"""Seeds load exactly what their CSV says, in one Delta commit per seed.

dbt-spark binds seed values by formatting them into the statement, so in a process build an
empty cell became the string 'None' (silver.cdc_parsed then said control_kind 'None' for every
change, op 'None' for every control record) and a quote would end its string. The project loads
seeds with literals of its own (macros/cdc_seed_if_changed.sql): an empty cell is NULL, and
the table is created with its rows and its checksum in one statement.
"""

from __future__ import annotations

import csv

from conftest import PROJECT, copy_project


def _csv_rows(name: str) -> list[tuple]:
    with (PROJECT / "seeds" / f"{name}.csv").open(encoding="utf-8", newline="") as file:
        return sorted(tuple(cell if cell != "" else None for cell in row) for row in list(csv.reader(file))[1:])


def test_seeds_hold_their_csv_with_empty_cells_as_null(lakehouse) -> None:
    lakehouse.dbt("seed", "--select", "cdc_op_codes", "cdc_key_overrides", "--full-refresh")

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


def test_a_seed_without_rows_is_an_empty_table_of_its_columns(lakehouse, tmp_path) -> None:
    """A user who empties an overrides CSV (its header only) gets an empty table, typed."""
    project = copy_project(tmp_path / "project")
    overrides = project / "seeds" / "cdc_column_type_overrides.csv"
    overrides.write_text(overrides.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    try:
        lakehouse.dbt("seed", "--select", "cdc_column_type_overrides", "--full-refresh", project=project)
        # dbt loads no rows of an empty CSV (no load_csv_rows call): the create makes the table;
        # then, unchanged, it is left as it is
        lakehouse.dbt("seed", "--select", "cdc_column_type_overrides", project=project)
        table = "cdc_config.cdc_column_type_overrides"
        assert lakehouse.rows(f"select count(*) as n from {table}") == [{"n": 0}]
        assert [(f.name, f.dataType.simpleString()) for f in lakehouse.spark.table(table).schema] == [
            ("source_database", "string"), ("source_table", "string"),
            ("column_name", "string"), ("spark_type", "string")]
        assert [h["operation"] for h in lakehouse.rows(f"describe history {table}")] == ["CREATE TABLE AS SELECT"]
    finally:
        lakehouse._seeded = False  # the next build of the session loads the shipped rows again
