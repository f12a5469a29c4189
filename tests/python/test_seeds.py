"""Seeds load exactly what their CSV says, as a view of their rows (a Delta table when too long).

dbt-spark binds seed values by formatting them into the statement, so in a process build an
empty cell became the string 'None' (silver.cdc_parsed then said control_kind 'None' for every
change, op 'None' for every control record) and a quote would end its string. The project loads
seeds with literals of its own (macros/utils/cdc_seed_if_changed.sql): an empty cell is NULL. A seed is
a view whose text holds its rows, with its CSV's checksum among its properties: no Delta write
to load it, no Delta snapshot to read it. A CSV too long for a view's text in the metastore is a
Delta table, created with its rows and its checksum in one statement.
"""

from __future__ import annotations

import csv

from conftest import PROJECT, copy_project

CHECKSUM = "cdc.seed_checksum"


def _kind_and_checksum(lakehouse, table: str) -> tuple[str, str]:
    """(VIEW or MANAGED, the seed's checksum property) of ``table``."""
    checksum = lakehouse.rows(f"show tblproperties {table} ('{CHECKSUM}')")[0]["value"]
    return lakehouse.described(table)["Type"], checksum


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
        # a view of its rows, which says what CSV it holds
        kind, checksum = _kind_and_checksum(lakehouse, table)
        assert kind == "VIEW" and len(checksum) > 64, (kind, checksum)

    # what the empty cells mean downstream: control records have no op, changes no control kind
    kinds = lakehouse.rows(
        "select record_kind, count(op) as ops, count(control_kind) as kinds from cdc_config.cdc_op_codes group by 1")
    assert {r["record_kind"]: (r["ops"] > 0, r["kinds"] > 0) for r in kinds} == {
        "change": (True, False), "control": (False, True)}


def test_a_seed_without_rows_is_an_empty_table_of_its_columns(lakehouse, tmp_path) -> None:
    """A user who empties an overrides CSV (its header only) gets an empty seed, typed."""
    project = copy_project(tmp_path / "project")
    overrides = project / "seeds" / "cdc_column_type_overrides.csv"
    overrides.write_text(overrides.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    try:
        lakehouse.dbt("seed", "--select", "cdc_column_type_overrides", "--full-refresh", project=project)
        # dbt loads no rows of an empty CSV: a view of one row of nulls that nothing keeps
        lakehouse.dbt("seed", "--select", "cdc_column_type_overrides", project=project)
        table = "cdc_config.cdc_column_type_overrides"
        assert lakehouse.rows(f"select count(*) as n from {table}") == [{"n": 0}]
        assert [(f.name, f.dataType.simpleString()) for f in lakehouse.spark.table(table).schema] == [
            ("source_database", "string"), ("source_table", "string"),
            ("column_name", "string"), ("spark_type", "string")]
        assert _kind_and_checksum(lakehouse, table)[0] == "VIEW"
    finally:
        lakehouse._seeded = False  # the next build of the session loads the shipped rows again


def test_a_seed_is_loaded_again_only_when_its_csv_changed_and_too_long_a_one_is_a_table(lakehouse, tmp_path) -> None:
    project = copy_project(tmp_path / "project")
    overrides = project / "seeds" / "cdc_key_overrides.csv"
    shipped = overrides.read_text(encoding="utf-8")
    table = "cdc_config.cdc_key_overrides"
    try:
        lakehouse.dbt("seed", "--select", "cdc_key_overrides", "--full-refresh", project=project)
        created = lakehouse.described(table)["Created Time"]
        # unchanged: left as it is (not created again)
        lakehouse.dbt("seed", "--select", "cdc_key_overrides", project=project)
        assert lakehouse.described(table)["Created Time"] == created

        # 2,000 rows: longer than a view's text may be, so a Delta table, in one commit
        header = shipped.splitlines()[0]
        rows = [f"db{i},table_{i},id|region_{i}" for i in range(2000)]
        overrides.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
        lakehouse.dbt("seed", "--select", "cdc_key_overrides", project=project)
        kind, checksum = _kind_and_checksum(lakehouse, table)
        assert kind == "MANAGED" and len(checksum) > 64
        assert [h["operation"] for h in lakehouse.rows(f"describe history {table}")] == ["CREATE TABLE AS SELECT"]
        assert lakehouse.rows(f"select count(*) as n, count(distinct key_columns) as k from {table}") == [
            {"n": 2000, "k": 2000}]

        # more rows than dbt's batch (500 here): created with the first 500, the rest inserted,
        # and the checksum set after the last insert
        (project / "macros" / "small_seed_batches.sql").write_text(
            "{% macro spark__get_batch_size() %}{{ return(500) }}{% endmacro %}\n", encoding="utf-8")
        overrides.write_text("\n".join([header, *rows, "db_last,table_last,id"]) + "\n", encoding="utf-8")
        lakehouse.dbt("seed", "--select", "cdc_key_overrides", project=project)
        assert [h["operation"] for h in lakehouse.rows(f"describe history {table}")][::-1] == [
            "CREATE TABLE AS SELECT", "WRITE", "WRITE", "WRITE", "WRITE", "SET TBLPROPERTIES"]
        assert _kind_and_checksum(lakehouse, table)[1] != checksum
        assert lakehouse.rows(f"select count(*) as n, max_by(key_columns, source_table) as last from {table}") == [
            {"n": 2001, "last": "id"}]

        # back to the shipped rows: a view again
        overrides.write_text(shipped, encoding="utf-8")
        lakehouse.dbt("seed", "--select", "cdc_key_overrides", project=project)
        assert _kind_and_checksum(lakehouse, table)[0] == "VIEW"
        assert sorted(tuple(r) for r in lakehouse.spark.table(table).collect()) == _csv_rows("cdc_key_overrides")
    finally:
        lakehouse._seeded = False  # the next build of the session loads the shipped rows again
