"""The dbt profile and the loader's session builder describe one and the same Spark session.

Both read the same environment variables (embedded default, or a cluster with a PostgreSQL
metastore and an object-storage warehouse), so they are compared under several environments.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import jinja2
import pytest
import yaml
from conftest import PROJECT, InProcessLakehouse
from lakehouse.session import JIT_OPTIONS, spark_conf, uses_derby

#: Spark's reference to the driver's working directory; dbt runs in the repo root.
_USER_DIR = "${system:user.dir}/"

#: Environments to compare the profile and the session under (beside LAKEHOUSE_DIR).
ENVIRONMENTS = {
    "embedded default": {},
    "cluster, postgres metastore, s3a warehouse": {
        "LAKEHOUSE_SPARK_MASTER": "spark://10.0.0.5:7077",
        "LAKEHOUSE_WAREHOUSE": "s3a://lake-bucket/cdc/warehouse",
        "LAKEHOUSE_METASTORE_URL": "jdbc:postgresql://db.internal:5432/metastore",
        "LAKEHOUSE_METASTORE_USER": "hive",
        "LAKEHOUSE_METASTORE_PASSWORD": "s3cr3t",
        "LAKEHOUSE_DRIVER_MEMORY": "2g",
        "LAKEHOUSE_EXECUTOR_MEMORY": "6g",
        "LAKEHOUSE_EXECUTOR_CORES": "3",
    },
    "other metastore database, explicit driver": {
        "LAKEHOUSE_METASTORE_URL": "jdbc:mysql://db.internal:3306/metastore",
        "LAKEHOUSE_METASTORE_DRIVER": "com.mysql.cj.jdbc.Driver",
    },
}


def _clear_lakehouse_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LAKEHOUSE_"):
            monkeypatch.delenv(name)


def _render(value: str) -> str:
    """Render one profile value the way dbt does: Jinja with ``env_var(name, default)``."""
    def env_var(name: str, default: str | None = None) -> str:
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise KeyError(f"env_var({name!r}) is required by the profile")
        return default

    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    environment.filters["as_number"] = int
    return environment.from_string(value).render(env_var=env_var)


def _absolute(value: str) -> str:
    """Paths of the profile are relative to the repo root, where dbt runs."""
    def fix(match: re.Match[str]) -> str:
        path = match.group(0)
        return path if path.startswith("/") else str(PROJECT / path)

    if value.startswith(_USER_DIR):
        return str(PROJECT / value.removeprefix(_USER_DIR))
    if value.startswith(("jdbc:", "s3a:", "spark:")):
        return value
    # a path is a value with a slash (after an option's `=`, or the whole value): not `-Xlog:cds=off`
    return re.sub(r"(?<==)[^ ]*/[^ ]*|^[.\w][\w./*-]*/[\w./*-]*$", fix, value)


def _local_profile() -> dict[str, str]:
    text = (PROJECT / "profiles" / "profiles.yml").read_text()
    params = yaml.safe_load(text)["cdc_lakehouse"]["outputs"]["local"]["server_side_parameters"]
    return {k: _absolute(_render(str(v))) for k, v in params.items()}


@pytest.mark.parametrize("env", ENVIRONMENTS.values(), ids=ENVIRONMENTS.keys())
def test_profile_equals_session_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    root = tmp_path / "lh"
    _clear_lakehouse_env(monkeypatch)
    monkeypatch.setenv("LAKEHOUSE_DIR", str(root))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    conf = spark_conf(root)
    assert _local_profile() == conf
    for name, key in (
        ("LAKEHOUSE_SPARK_MASTER", "spark.master"), ("LAKEHOUSE_WAREHOUSE", "spark.sql.warehouse.dir"),
        ("LAKEHOUSE_METASTORE_URL", "spark.hadoop.javax.jdo.option.ConnectionURL"),
        ("LAKEHOUSE_METASTORE_PASSWORD", "spark.hadoop.javax.jdo.option.ConnectionPassword"),
        ("LAKEHOUSE_EXECUTOR_MEMORY", "spark.executor.memory"), ("LAKEHOUSE_EXECUTOR_CORES", "spark.executor.cores"),
    ):  # fmt: skip
        if name in env:
            assert conf[key] == env[name], key


def test_embedded_default_is_local_derby_under_lakehouse_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_lakehouse_env(monkeypatch)
    conf = spark_conf(tmp_path)
    assert conf["spark.master"] == "local[*]"
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "warehouse")
    assert uses_derby(conf) and f"-Dderby.system.home={tmp_path} " in conf["spark.driver.extraJavaOptions"]
    # Hive's and DataNucleus' own defaults: with Derby they change nothing
    assert conf["spark.hadoop.javax.jdo.option.ConnectionDriverName"] == "org.apache.derby.jdbc.EmbeddedDriver"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionUserName"] == "APP"
    assert conf["spark.hadoop.datanucleus.autoStartMechanism"] == "None"


def test_postgres_metastore_url_picks_its_driver(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _clear_lakehouse_env(monkeypatch)
    monkeypatch.setenv("LAKEHOUSE_METASTORE_URL", "jdbc:postgresql://127.0.0.1:5433/metastore")
    conf = spark_conf(tmp_path)
    assert conf["spark.hadoop.javax.jdo.option.ConnectionDriverName"] == "org.postgresql.Driver"
    # the whole schema at the first connection (lazy creation deadlocks on PostgreSQL)
    assert conf["spark.hadoop.datanucleus.autoStartMechanism"] == "MetaData"
    assert not uses_derby(conf)
    profile = _local_profile()
    assert profile["spark.hadoop.javax.jdo.option.ConnectionDriverName"] == "org.postgresql.Driver"
    assert profile["spark.hadoop.datanucleus.autoStartMechanism"] == "MetaData"


def test_lakehouse_dirs_are_disjoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_lakehouse_env(monkeypatch)
    a, b = spark_conf(tmp_path / "a"), spark_conf(tmp_path / "b")
    for key in ("spark.sql.warehouse.dir", "spark.driver.extraJavaOptions"):
        assert a[key] != b[key] and str(tmp_path / "a") in a[key]


def test_the_driver_runs_the_throughput_collector(_shared_lakehouse: InProcessLakehouse) -> None:
    """The setting reaches the JVM: its collectors are the parallel ones, not G1's."""
    jvm = _shared_lakehouse.spark.sparkContext._jvm
    assert jvm is not None
    names = {bean.getName() for bean in jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names


def test_the_driver_compiles_with_the_raised_jit_thresholds(_shared_lakehouse: InProcessLakehouse) -> None:
    """The JIT setting reaches the JVM: C2 waits for forty times HotSpot's call count."""
    jvm = _shared_lakehouse.spark.sparkContext._jvm
    assert jvm is not None
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    for option in JIT_OPTIONS.split():
        name, value = option.removeprefix("-XX:").split("=")
        assert bean.getVMOption(name).getValue() == value, name
    assert bean.getVMOption("Tier4InvocationThreshold").getValue() == "200000"
