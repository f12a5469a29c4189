"""``lakehouse build`` runs dbt in two threads (LAKEHOUSE_THREADS), both in dbt-spark's one Spark
session. The history and the table columns run side by side, and each records its own
watermark in meta.cdc_build_progress."""

from __future__ import annotations

from pathlib import Path

import pytest
from cdc_messages import DebeziumTable
from lakehouse.dbt_session import with_threads

WRITTEN = ("silver.cdc_parsed", "gold.cdc_history_versions", "gold.cdc_table_columns")


@pytest.mark.parametrize(("args", "env", "expected"), [
    (["build"], None, ["build", "--threads", "2"]),
    (["run", "--select", "gold"], "1", ["run", "--select", "gold", "--threads", "1"]),
    (["build", "--threads", "4"], "1", ["build", "--threads", "4"]),
    (["build", "--threads=3"], None, ["build", "--threads=3"]),
    # data tests record nothing: dbt's own setting
    (["test"], "3", ["test"]),
])  # fmt: skip
def test_a_build_runs_in_two_threads_unless_told(args, env, expected, monkeypatch) -> None:
    if env is None:
        monkeypatch.delenv("LAKEHOUSE_THREADS", raising=False)
    else:
        monkeypatch.setenv("LAKEHOUSE_THREADS", env)
    assert with_threads(args) == expected


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_wrong_number_of_threads_is_named(value, monkeypatch) -> None:
    monkeypatch.setenv("LAKEHOUSE_THREADS", value)
    with pytest.raises(ValueError, match=f"LAKEHOUSE_THREADS='{value}': give a whole number"):
        with_threads(["build"])


def _watermark_tables(lakehouse) -> dict[str, str | None]:
    """The table named in what was recorded for each written table's newest version."""
    return {table: (lakehouse.progress(table) or {}).get("table") for table in WRITTEN}


def test_models_built_side_by_side_each_commit_their_own_watermark(lakehouse, tmp_path: Path) -> None:
    t = DebeziumTable("dbserver1", "inventory", "threads", ["id"])
    lakehouse.ingest(t.envelopes([t.insert({"id": i, "v": "a"}) for i in range(20)], first_offset=0),
                     fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "first")
    assert "Concurrency: 2 threads" in log
    assert _watermark_tables(lakehouse) == {table: table for table in WRITTEN}

    # an increment with a new column: the history appends and the table columns MERGE, beside it
    changes = [t.update({"id": i, "v": "a"}, {"id": i, "v": "b", "w": i}) for i in range(0, 20, 2)]
    lakehouse.ingest(t.envelopes(changes, first_offset=20), fmt="debezium-json")
    lakehouse.logged_build(tmp_path / "increment")
    assert _watermark_tables(lakehouse) == {table: table for table in WRITTEN}
    state = lakehouse.current_state("threads")
    assert state[("threads", '{"id":4}')] == {"id": "4", "v": "b", "w": "4"}, sorted(state.items())[:3]
    columns = {r["column_name"] for r in lakehouse.rows(
        "select column_name from gold.cdc_table_columns where source_table = 'threads'")}
    assert columns == {"id", "v", "w"}
