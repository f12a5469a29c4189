"""The user-facing commands, run as a user runs them, against a temporary LAKEHOUSE_DIR."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import BIN, PROJECT, CliLakehouse
from scenarios import debezium_history, hard_delivery


def test_help_reads_like_the_readme() -> None:
    for args in ([], ["ingest"], ["build"], ["sql"]):
        out = subprocess.run([str(BIN / "lakehouse"), *args, "--help"], capture_output=True,
                             text=True, check=True).stdout
        assert "LAKEHOUSE_DIR" in out or args, out
        if args == ["ingest"]:
            assert "--from-file" in out and "--bootstrap-servers" in out and "--format" in out


def test_batches_with_duplicates_and_late_changes_reach_the_true_state(tmp_path: Path) -> None:
    dbz, truth = debezium_history(seed=11, keys=20, changes=120)
    first, second = hard_delivery(dbz, seed=11, batches=2)
    files = []
    for i, batch in enumerate((first, second)):
        path = tmp_path / f"batch{i}.jsonl"
        path.write_text("".join(line + "\n" for line in batch), encoding="utf-8")
        files.append(path)

    lh = CliLakehouse(tmp_path / "lakehouse")
    out = lh.run("ingest", "--from-file", str(files[0]), "--format", "debezium-json").stdout
    assert f"read {len(first)}, landed {len(first)}, skipped 0" in out
    # dbt's own arguments pass through; the data tests run once, on the final state below
    lh.run("build", "--exclude", "resource_type:test")
    # the second batch repeats some records of its own; re-landing the first adds nothing
    out = lh.run("ingest", "--from-file", str(files[1]), "--format", "debezium-json").stdout
    assert f"landed {len(set(second))}," in out
    out = lh.run("ingest", "--from-file", str(files[0]), "--format", "debezium-json").stdout
    assert "landed 0," in out
    lh.run("build")

    # (a build that finds nothing new changes nothing: test_nothing_new.py, in-process)
    rows = lh.sql_json("select * from gold.cdc_current_state order by source_table, pk")
    state = {r["pk"]: json.loads(r["row"], parse_float=str, parse_int=str)
             for r in rows if r["source_table"] == "accounts"}
    assert state == truth

    # another LAKEHOUSE_DIR sees none of these tables
    other = CliLakehouse(tmp_path / "other")
    assert "bronze" not in {r["namespace"] for r in other.sql_json("show databases")}


def test_demo_sample_is_current() -> None:
    """samples/debezium_inventory.jsonl is what samples/generate.py writes."""
    sample = PROJECT / "samples" / "debezium_inventory.jsonl"
    before = sample.read_text(encoding="utf-8")
    subprocess.run([str(BIN / "python"), "samples/generate.py"], cwd=PROJECT, check=True,
                   capture_output=True)
    assert sample.read_text(encoding="utf-8") == before
