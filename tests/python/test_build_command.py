"""``lakehouse build``: dbt in the command's own process on the local target (the Spark
session started beside dbt's start, lakehouse.dbt_session), dbt's command on other targets."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import BIN
from lakehouse.dbt_session import target_of


@pytest.mark.parametrize(("args", "env", "target"), [
    (["build"], {}, "local"),
    (["build", "--select", "gold"], {"DBT_TARGET": "thrift"}, "thrift"),
    (["build", "--target", "thrift"], {}, "thrift"),
    (["build", "-t", "thrift", "--select", "gold"], {}, "thrift"),
    (["build", "--target=local"], {"DBT_TARGET": "thrift"}, "local"),
    # a value that only looks like the option is not one
    (["build", "--vars", "{target: thrift}"], {}, "local"),
])
def test_the_target_is_read_as_dbt_reads_it(args, env, target, monkeypatch) -> None:
    monkeypatch.delenv("DBT_TARGET", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert target_of(args) == target


def test_a_usage_error_exits_as_dbt_does(tmp_path: Path) -> None:
    """dbt's runner, unlike its command, prints no usage error: the build says it, and exits 2."""
    proc = subprocess.run([str(BIN / "lakehouse"), "build", "--no-such-flag"], cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "LAKEHOUSE_DIR": str(tmp_path / "lh")},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Error: No such option: --no-such-flag" in proc.stderr
