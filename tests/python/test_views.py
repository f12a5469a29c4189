"""The project's views are created again only when their SQL changed (macros/utils/cdc_view_if_changed.sql).

dbt-spark replaces every view at every build; here a view keeps a digest of the statement that
made it (property cdc.sql_digest), which dbt's listing of the schema shows, and a build whose
view SQL is the same sends no statement for it. The views follow the tables below them (WITH
SCHEMA EVOLUTION), so one left as it is still shows a column added to its table.
"""

from __future__ import annotations

from conftest import copy_project

DIGEST = "cdc.sql_digest"
CHANGE = ('{"before":null,"after":{"id":1,"name":"a"},"source":{"db":"shop","table":"items",'
          '"ts_ms":1700000000000,"file":"binlog.000001","pos":1},"op":"c","ts_ms":1700000000000}')
CREATE = "create or replace view silver.cdc_changes"


def _digest(lakehouse, view: str) -> str:
    return lakehouse.rows(f"show tblproperties {view} ('{DIGEST}')")[0]["value"]


def test_a_view_is_created_again_only_when_its_sql_changed(lakehouse, tmp_path) -> None:
    lakehouse.ingest([CHANGE], fmt="debezium-json", topic="shop.items")
    lakehouse.build("--select", "+cdc_changes", tests=False)
    info = lakehouse.described("silver.cdc_changes")
    assert info["Type"] == "VIEW" and info["View Schema Mode"] == "EVOLUTION", info
    digest = _digest(lakehouse, "silver.cdc_changes")
    assert len(digest) == 32, digest

    # the same SQL: no statement at all for the view
    assert CREATE not in lakehouse.logged_build(tmp_path / "same", "--select", "cdc_changes")
    assert _digest(lakehouse, "silver.cdc_changes") == digest
    # --full-refresh creates it anyway
    assert CREATE in lakehouse.logged_build(tmp_path / "refresh", "--select", "cdc_changes", "--full-refresh")

    # other SQL (a project that changed the model): created again, with its new digest
    project = copy_project(tmp_path / "project")
    model = project / "models" / "silver" / "cdc_changes.sql"
    model.write_text(model.read_text(encoding="utf-8").replace("select * from final", "select * from final where true"),
                     encoding="utf-8")
    assert CREATE in lakehouse.logged_build(tmp_path / "changed", "--select", "cdc_changes", project=project)
    assert _digest(lakehouse, "silver.cdc_changes") not in (digest, "")


def test_a_view_left_as_it_is_shows_a_column_added_below_it(lakehouse, tmp_path) -> None:
    # a user's view of every column of silver.cdc_parsed, in a copy of the project
    lakehouse.ingest([CHANGE], fmt="debezium-json", topic="shop.items")
    project = copy_project(tmp_path / "project")
    (project / "models" / "silver" / "all_parsed.sql").write_text(
        "select * from {{ ref('cdc_parsed') }}\n", encoding="utf-8")
    lakehouse.dbt("build", "--select", "+all_parsed", "--exclude", "resource_type:test", project=project)
    before = lakehouse.spark.table("silver.all_parsed").columns
    lakehouse.spark.sql("alter table silver.cdc_parsed add columns (added_by_an_upgrade string)")
    try:
        log = lakehouse.logged_build(tmp_path / "again", "--select", "all_parsed", project=project)
        assert "create or replace view silver.all_parsed" not in log
        # the build sent no statement for the view, and it shows the new column
        assert lakehouse.spark.table("silver.all_parsed").columns == [*before, "added_by_an_upgrade"]
    finally:
        lakehouse.spark.sql("drop view if exists silver.all_parsed")
        lakehouse.spark.sql("drop table if exists silver.cdc_parsed")


def test_persist_docs_comments_a_view_and_its_columns(lakehouse, tmp_path) -> None:
    # as with dbt-spark's views: the model's description is the view's comment and, with
    # `columns: true`, each documented column's description its comment; a changed description
    # creates the view again
    lakehouse.ingest([CHANGE], fmt="debezium-json", topic="shop.items")
    project = copy_project(tmp_path / "project")
    model = project / "models" / "silver" / "cdc_quarantine.sql"
    model.write_text("{{ config(persist_docs={'relation': true, 'columns': true}) }}\n"
                     + model.read_text(encoding="utf-8"), encoding="utf-8")
    lakehouse.dbt("build", "--select", "+cdc_quarantine", "--exclude", "resource_type:test", project=project)

    def comments() -> dict[str, str]:
        rows = lakehouse.rows("describe table extended silver.cdc_quarantine")
        return {r["col_name"]: r["comment"] if r["col_name"] != "Comment" else r["data_type"] for r in rows}

    described = comments()
    assert described["Comment"].startswith("One row per bronze record that could not be understood")
    assert described["reason"].startswith("Why the record could not be understood")

    log = lakehouse.logged_build(tmp_path / "same", "--select", "cdc_quarantine", project=project)
    assert "create or replace view silver.cdc_quarantine" not in log

    docs = project / "models" / "silver" / "_silver__models.yml"
    reworded = docs.read_text(encoding="utf-8").replace(
        "description: Why the record could not be understood",
        "description: Why, in words, the record could not be understood")
    docs.write_text(reworded, encoding="utf-8")
    lakehouse.dbt("run", "--select", "cdc_quarantine", project=project)
    assert comments()["reason"].startswith("Why, in words, the record could not be understood")
