"""The driver's class archive (lakehouse.cds), which ``make setup`` writes, serves every session.

Each test requires the archive (``-Xshare:on``): a JVM that cannot use it then fails to start,
where the project's own options would let it start without it, silently slower. The archive
keeps the class path as the dumping JVM was given it, so the two ways a driver gets its class
path are both checked: absolute (the session module, from any folder) and relative to the
checkout (dbt's profile).
"""

from __future__ import annotations

from pathlib import Path

from conftest import PROJECT, CliLakehouse
from lakehouse.cds import ARCHIVE, archive_options, java_options


def _requiring_the_archive(tmp_path: Path, cwd: Path) -> CliLakehouse:
    """A fresh lakehouse whose commands run in ``cwd`` and whose drivers must map the archive."""
    assert ARCHIVE.is_file(), f"no class archive at {ARCHIVE}: `make setup` (make cds) writes it"
    lakehouse = CliLakehouse(tmp_path / "lh", cwd=cwd)
    lakehouse.env["LAKEHOUSE_CDS_OPTIONS"] = archive_options(required=True)
    return lakehouse


def test_the_default_options_map_the_archive(monkeypatch) -> None:
    monkeypatch.delenv("LAKEHOUSE_CDS_OPTIONS", raising=False)
    assert java_options() == archive_options(ARCHIVE)
    assert java_options().startswith(f"-XX:SharedArchiveFile={ARCHIVE} ")


def test_a_session_started_outside_the_checkout_maps_the_archive(tmp_path: Path) -> None:
    lakehouse = _requiring_the_archive(tmp_path, cwd=tmp_path)
    assert lakehouse.sql_json("select 40 + 2 as answer") == [{"answer": "42"}]


def test_a_dbt_build_maps_the_archive(tmp_path: Path) -> None:
    lakehouse = _requiring_the_archive(tmp_path, cwd=PROJECT)
    assert "Completed successfully" in lakehouse.run("build", "--select", "cdc_op_codes").stdout
