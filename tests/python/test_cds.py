"""The driver's class archive (lakehouse.cds), which ``make setup`` writes, serves every session.

Each test forces the archive on (``-Xshare:on``): a JVM that cannot use it then fails to start,
where the project's own options would let it start without it, silently slower. The archive
keeps the class path as the dumping JVM was given it, so the two ways a driver gets its class
path are both checked: absolute (the session module, from any folder) and relative to the
checkout (dbt's profile).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import BIN, PROJECT
from lakehouse.cds import ARCHIVE, java_options


@pytest.fixture
def forced_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a command whose driver must map the archive, in a fresh lakehouse."""
    assert ARCHIVE.is_file(), f"no class archive at {ARCHIVE}: `make setup` (make cds) writes it"
    monkeypatch.delenv("LAKEHOUSE_CDS_OPTIONS", raising=False)
    options = java_options().replace("-Xlog:cds=off -Xlog:cds+dynamic=off", "-Xshare:on")
    assert f"-XX:SharedArchiveFile={ARCHIVE}" in options
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEHOUSE_")}
    return dict(env, LAKEHOUSE_DIR=str(tmp_path / "lh"), LAKEHOUSE_CDS_OPTIONS=options)


def test_a_session_started_outside_the_checkout_maps_the_archive(forced_env: dict[str, str], tmp_path: Path) -> None:
    result = subprocess.run(
        [str(BIN / "lakehouse"), "sql", "select 40 + 2 as answer", "--json"],
        cwd=tmp_path, env=forced_env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout) == {"answer": 42}


def test_a_dbt_build_maps_the_archive(forced_env: dict[str, str]) -> None:
    result = subprocess.run(
        [str(BIN / "lakehouse"), "build", "--select", "cdc_op_codes"],
        cwd=PROJECT, env=forced_env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert "Completed successfully" in result.stdout
