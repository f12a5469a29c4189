"""The one Spark session configuration of the embedded lakehouse.

The loader, ``lakehouse sql`` and the tests build their session here; the dbt profile
(``profiles/profiles.yml``, target ``local``) carries the same settings as
``server_side_parameters`` and a test keeps the two equal. Everything a lakehouse owns
(warehouse, Derby metastore, checkpoints) sits under ``LAKEHOUSE_DIR``, so two directories
never see each other's tables.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from lakehouse.paths import LOG4J_CONFIG, SPARK_JARS_DIR, lakehouse_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_conf(root: Path | None = None) -> dict[str, str]:
    """Spark settings for the embedded default rooted at ``root`` (``LAKEHOUSE_DIR``)."""
    root = root or lakehouse_dir()
    return {
        "spark.master": os.environ.get("LAKEHOUSE_SPARK_MASTER", "local[*]"),
        "spark.driver.memory": os.environ.get("LAKEHOUSE_DRIVER_MEMORY", "4g"),
        # A JVM classpath wildcard: the profile can name the same folder without listing jars.
        "spark.driver.extraClassPath": f"{SPARK_JARS_DIR}/*",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(root / "warehouse"),
        # Relative to derby.system.home, so the profile can say the same without an absolute path.
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            "jdbc:derby:;databaseName=metastore_db;create=true"
        ),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={root} -Dlog4j2.configurationFile={LOG4J_CONFIG}"
        ),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.ansi.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.optimizeWrite.enabled": "true",
    }


def repair_aborted_metastore(root: Path) -> None:
    """Remove a Derby metastore whose creation was killed half-way, so the next start works.

    Derby writes ``service.properties`` last when it creates a database. A process killed
    before that (e.g. SIGKILL during the first ``lakehouse ingest`` of a new LAKEHOUSE_DIR)
    leaves a directory Derby refuses to boot (ERROR XBM0A) forever after. Such a database was
    never usable, so it holds no table registrations: deleting it loses nothing.
    """
    db = root / "metastore_db"
    if db.is_dir() and not (db / "service.properties").exists():
        shutil.rmtree(db)


def get_spark(app_name: str = "lakehouse", root: Path | None = None) -> SparkSession:
    """The session for ``root``: Delta catalog, Hive metastore under the lakehouse directory."""
    from pyspark.sql import SparkSession

    root = root or lakehouse_dir()
    root.mkdir(parents=True, exist_ok=True)
    repair_aborted_metastore(root)
    builder = SparkSession.builder.appName(app_name).enableHiveSupport()
    for key, value in spark_conf(root).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
