"""The dbt profile and the loader's session builder describe one and the same Spark session."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from conftest import PROJECT
from lakehouse.session import spark_conf


def _render(text: str, env: dict[str, str]) -> str:
    """Render the profile's env_var('NAME', 'default') calls the way dbt does."""
    pattern = re.compile(r"\{\{\s*env_var\('([A-Z0-9_]+)',\s*'([^']*)'\)\s*\}\}")
    return pattern.sub(lambda m: env.get(m.group(1), m.group(2)), text)


def _absolute(value: str) -> str:
    """Paths of the profile are relative to the repo root, where dbt runs."""
    def fix(match: re.Match[str]) -> str:
        path = match.group(0)
        return path if path.startswith("/") else str(PROJECT / path)

    if value.startswith("jdbc:"):
        return value
    return re.sub(r"(?<==)[^ ]+|^[.\w][\w./*-]*/[\w./*-]*$", fix, value)


def test_profile_equals_session_conf(tmp_path: Path) -> None:
    root = tmp_path / "lh"
    text = (PROJECT / "profiles" / "profiles.yml").read_text()
    profile = yaml.safe_load(_render(text, {"LAKEHOUSE_DIR": str(root)}))
    params = profile["cdc_lakehouse"]["outputs"]["local"]["server_side_parameters"]
    assert {k: _absolute(str(v)) for k, v in params.items()} == spark_conf(root)


def test_lakehouse_dirs_are_disjoint(tmp_path: Path) -> None:
    a, b = spark_conf(tmp_path / "a"), spark_conf(tmp_path / "b")
    for key in ("spark.sql.warehouse.dir", "spark.driver.extraJavaOptions"):
        assert a[key] != b[key] and str(tmp_path / "a") in a[key]
