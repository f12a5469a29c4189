"""The one Spark session configuration of the lakehouse, embedded or on a cluster.

The loader, ``lakehouse sql``, ``lakehouse serve`` and the tests build their session here; the
dbt profile (``profiles/profiles.yml``, target ``local``) carries the same settings as
``server_side_parameters`` and a test keeps the two equal.

With nothing set this is the embedded default: local Spark, everything a lakehouse owns
(warehouse, Derby metastore, checkpoints) under ``LAKEHOUSE_DIR``, so two directories never see
each other's tables. Environment variables, read here and by the profile alike, move it onto a
cluster without code changes (README "Run it on your cluster"):

- ``LAKEHOUSE_SPARK_MASTER``: ``spark://host:7077``, ``yarn``, ``k8s://...`` (default ``local[*]``);
- ``LAKEHOUSE_WAREHOUSE``: where tables live, a path every executor sees or a URI such as
  ``s3a://bucket/lakehouse`` (default ``$LAKEHOUSE_DIR/warehouse``);
- ``LAKEHOUSE_METASTORE_URL`` (+ ``_USER``, ``_PASSWORD``, ``_DRIVER``): the Hive metastore
  database, e.g. ``jdbc:postgresql://host:5432/metastore``, shared by every process at once
  (default: Derby in ``LAKEHOUSE_DIR``, one process at a time);
- ``LAKEHOUSE_DRIVER_MEMORY``, ``LAKEHOUSE_EXECUTOR_MEMORY``, ``LAKEHOUSE_EXECUTOR_CORES``.

Settings that only matter on a cluster (executor class path, memory and cores) and the metastore
settings carry, when unset, the values Spark and Hive use anyway for the embedded default, so
the local session behaves exactly as without them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lakehouse import cds
from lakehouse.paths import LOG4J_CONFIG, SPARK_JARS_DIR, lakehouse_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


#: The metastore of the embedded default: Derby, relative to ``derby.system.home`` (the
#: lakehouse directory), so the profile can say the same without an absolute path.
DERBY_METASTORE_URL = "jdbc:derby:;databaseName=metastore_db;create=true"
DERBY_DRIVER = "org.apache.derby.jdbc.EmbeddedDriver"
POSTGRES_DRIVER = "org.postgresql.Driver"


def metastore_driver(url: str) -> str:
    """The JDBC driver class of the metastore at ``url``: ``LAKEHOUSE_METASTORE_DRIVER``, else by URL.

    PostgreSQL's driver ships in ``.cache/jars/spark`` (jvm/pom.xml); another database needs its
    driver jar there and ``LAKEHOUSE_METASTORE_DRIVER``.
    """
    default = POSTGRES_DRIVER if url.startswith("jdbc:postgresql:") else DERBY_DRIVER
    return os.environ.get("LAKEHOUSE_METASTORE_DRIVER", default)


#: Columns written without Parquet dictionary encoding: every value distinct or nearly (raw
#: messages, row images, keys, orders, ids), so the writer fills a dictionary page per column
#: chunk only to drop it, which slows every write for files no smaller.
#: Parquet's per-column setting (parquet.enable.dictionary#<column>) matches by name, in any
#: table; the few tables with a low-cardinality column of one of these names are small.
NO_DICTIONARY_COLUMNS = (
    "value", "key",  # bronze
    "record_id", "before_image", "after_image", "raw_value", "raw_value_base64", "raw_key",  # silver
    "pk", "before_pk", "vendor_sequence", "apply_order", "change_id",  # silver and gold
    "kafka_offset", "kafka_timestamp", "transaction_id",  # silver
    "version_id", "row", "next_apply_order",  # gold.cdc_history_versions
)

#: Columns written without Parquet min/max statistics: long text no reader filters by (row
#: images, raw messages) and ids matched by joins, not ranges, whose every value Parquet would
#: otherwise compare with its page's and row group's bounds for nothing. For the same reason
#: Parquet's size statistics are off and timestamps are INT64, not the legacy INT96, whose
#: 12-byte values go through a dictionary of byte arrays. Delta keeps its own statistics for
#: file skipping (each model's delta.dataSkippingStatsColumns); the key and order columns keep
#: Parquet's for row groups.
NO_STATISTICS_COLUMNS = (
    "before_image", "after_image", "raw_value", "raw_value_base64",  # silver
    "record_id", "change_id", "version_id", "row",  # silver and gold
)


#: The JIT's thresholds for its optimising compiler (C2), forty times HotSpot's: a method is
#: compiled by C2 after 200,000 calls or 1.6M loop iterations, and runs as C1's quick code
#: until then. Our processes are short (an ingest, a build), and with HotSpot's thresholds the
#: JVM's compiler threads spend more CPU than the tasks, mostly on start-up code (metastore,
#: Delta, the planner) that runs a few thousand times. Far higher thresholds, or C1 alone, are
#: worse: the rows' hot loops do need C2.
JIT_OPTIONS = (
    "-XX:Tier4InvocationThreshold=200000 -XX:Tier4MinInvocationThreshold=80000 "
    "-XX:Tier4CompileThreshold=240000 -XX:Tier4BackEdgeThreshold=1600000"
)


def spark_conf(root: Path | None = None) -> dict[str, str]:
    """Spark settings of the lakehouse rooted at ``root`` (``LAKEHOUSE_DIR``), from the environment."""
    root = root or lakehouse_dir()
    metastore_url = os.environ.get("LAKEHOUSE_METASTORE_URL", DERBY_METASTORE_URL)
    derby = metastore_url.startswith("jdbc:derby:")
    return {
        "spark.master": os.environ.get("LAKEHOUSE_SPARK_MASTER", "local[*]"),
        # 2800m of heap keeps the whole driver process (heap, metaspace, code cache, buffers) under
        # 4 GiB resident, even in a large first build, where a 4g heap let it grow past that.
        "spark.driver.memory": os.environ.get("LAKEHOUSE_DRIVER_MEMORY", "2800m"),
        # A JVM classpath wildcard: the profile can name the same folder without listing jars.
        "spark.driver.extraClassPath": f"{SPARK_JARS_DIR}/*",
        # Executors on a cluster need Delta and the Kafka connector too; the same absolute path,
        # so every worker needs the checkout's jars there (same machine, shared disk, or image).
        # Local mode runs no separate executors and ignores the three executor settings.
        "spark.executor.extraClassPath": f"{SPARK_JARS_DIR}/*",
        "spark.executor.memory": os.environ.get("LAKEHOUSE_EXECUTOR_MEMORY", "1g"),
        "spark.executor.cores": os.environ.get("LAKEHOUSE_EXECUTOR_CORES", "1"),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # The project's JVM functions (jvm/functions, built by `make jars` into the jars folder):
        # the parsers mark exact JSON numbers with cdc_lakehouse.json.mark, not with regexes.
        "spark.sql.catalog.cdc_lakehouse": "cdc.lakehouse.JsonFunctions",
        "spark.sql.warehouse.dir": os.environ.get("LAKEHOUSE_WAREHOUSE", str(root / "warehouse")),
        "spark.hadoop.javax.jdo.option.ConnectionURL": metastore_url,
        # Unset: Hive's own defaults (Derby's driver, user APP, password mine).
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": metastore_driver(metastore_url),
        "spark.hadoop.javax.jdo.option.ConnectionUserName": os.environ.get("LAKEHOUSE_METASTORE_USER", "APP"),
        "spark.hadoop.javax.jdo.option.ConnectionPassword": os.environ.get("LAKEHOUSE_METASTORE_PASSWORD", "mine"),
        # Spark's Hive 2.3 client creates the metastore schema in an empty database only when it
        # is Derby (HiveClientImpl sets these two for jdbc:derby URLs); said here, an empty
        # PostgreSQL database gets its schema at the first connection too.
        "spark.hadoop.datanucleus.schema.autoCreateAll": "true",
        "spark.hadoop.hive.metastore.schema.verification": "false",
        # DataNucleus otherwise creates a table the first time its class is used, and on
        # PostgreSQL that deadlocks: the first `create table` inserts into TBLS in a transaction,
        # then the new TBL_PRIVS table's foreign key to TBLS waits, on a second connection, for
        # that very transaction. Starting with every class of Hive's package.jdo creates the
        # whole schema (tables and foreign keys) at the first connection instead. Derby keeps
        # DataNucleus' default, None.
        "spark.hadoop.datanucleus.autoStartMechanism": "None" if derby else "MetaData",
        "spark.hadoop.datanucleus.autoStartMetaDataFiles": "package.jdo",
        # The class archive (lakehouse.cds), then the throughput collector: on two cores G1's
        # concurrent threads take CPU from the tasks, which the parallel collector leaves to
        # them. Then the JIT's thresholds (JIT_OPTIONS).
        "spark.driver.extraJavaOptions": (
            f"{cds.java_options()} -XX:+UseParallelGC {JIT_OPTIONS} -Dderby.system.home={root} "
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}"
        ),
        "spark.sql.session.timeZone": "UTC",
        # Enough partitions that a shuffle of millions of changes (the history) sorts in
        # memory; adaptive execution coalesces them to one or two for small data.
        "spark.sql.shuffle.partitions": "16",
        # One bronze file (bronze.RECORDS_PER_FILE, about 25 MB) or silver file per task: with the
        # default 128 MB Spark packs five into one, and a parse of few such tasks on two cores
        # leaves one core idle while the last task runs.
        "spark.sql.files.maxPartitionBytes": "32m",
        "spark.sql.ansi.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Delta rebuilds a table's snapshot after each commit in `snapshotPartitions` tasks (50 by
        # default): on a small machine that alone is a noticeable cost per model and data test.
        # Optimized writes add a shuffle to every write; the models write few, large files anyway.
        "spark.databricks.delta.optimizeWrite.enabled": "false",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.hadoop.parquet.size.statistics.enabled": "false",
        **{f"spark.hadoop.parquet.enable.dictionary#{column}": "false" for column in NO_DICTIONARY_COLUMNS},
        **{f"spark.hadoop.parquet.column.statistics.enabled#{column}": "false" for column in NO_STATISTICS_COLUMNS},
    }


def uses_derby(conf: dict[str, str]) -> bool:
    """True when ``conf`` keeps the metastore in Derby (one process at a time may open it)."""
    return conf["spark.hadoop.javax.jdo.option.ConnectionURL"].startswith("jdbc:derby:")


def metastore_in_use(root: Path) -> bool:
    """True when another process has the Derby metastore of ``root`` open.

    Derby holds a POSIX lock on ``metastore_db/dbex.lck`` while a database is booted (the
    file itself stays behind after a crash, so its mere presence means nothing). Taking and
    releasing that lock here is how we ask without starting a JVM. Not asked in a process
    that runs a Spark driver already (the tests' in-process lakehouse, which lands through the
    CLI's code): the JDK's lock conflicts with ours there too, and its own session would be
    taken for another process.
    """
    if _jvm_running():
        return False
    lock = root / "metastore_db" / "dbex.lck"
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False  # no metastore yet, or not ours to open: let Derby decide
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _running_context_class() -> Any | None:
    """pyspark's ``SparkContext`` class when this process has started its gateway JVM, else None.

    Looked up among the loaded modules rather than imported: a command that never started
    Spark must not pay pyspark's import to learn that (``pyspark.core.context`` since Spark 4,
    ``pyspark.context`` before).
    """
    module = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    if module is None or getattr(module.SparkContext, "_gateway", None) is None:
        return None
    return module.SparkContext


def _jvm_running() -> bool:
    """True when this process already runs a Spark driver (pyspark's gateway)."""
    return _running_context_class() is not None


#: How long a metastore found open is watched for its release before it counts as busy. A
#: driver's JVM stops after the Python process that started it has returned, so Derby's lock
#: can stay held for a moment after a command returned (a plain `dbt build` leaves it so;
#: `lakehouse` commands wait for their own JVM, see stop_driver). The next command of a script must
#: not take that for another process.
DERBY_RELEASE_GRACE_SECONDS = 3.0


def derby_busy(root: Path, grace: float = DERBY_RELEASE_GRACE_SECONDS) -> bool:
    """True when the metastore of ``root`` is Derby and another process has it open.

    Checked by the commands that start a Spark driver before they start it: Derby would refuse
    the second process only after ten retries of Hive's metastore client and tens of
    thousands of lines of stack traces. A metastore on a database server is shared. One
    found open is asked again every 0.1 s for ``grace`` seconds: a process that is ending lets
    go of it within that.
    """
    if not uses_derby(spark_conf(root)):
        return False
    deadline = time.monotonic() + grace
    while metastore_in_use(root):
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.1)
    return False


def stop_driver() -> None:
    """Stop this process's Spark driver, if it started one, and wait for its JVM to exit.

    The JVM is a child process that stops on its own once Python has gone (it reads its stdin
    to the end), taking about half a second more, with the Derby metastore still open: a
    script's next command (`lakehouse ingest ... && lakehouse build`) found it busy, and shared
    the cores with it. Called by the `lakehouse` command before it returns, not by callers that
    keep using their session (the tests' in-process lakehouse).
    """
    context = _running_context_class()
    if context is None:
        return
    gateway = context._gateway  # noqa: SLF001 - pyspark keeps the JVM's process only here
    if context._active_spark_context is not None:  # noqa: SLF001
        context._active_spark_context.stop()  # noqa: SLF001
    process = getattr(gateway, "proc", None)
    if process is None or process.stdin is None:
        return  # a JVM pyspark did not start (PYSPARK_GATEWAY_PORT): not ours to stop
    # py4j's finalizer thread tells the JVM about the Python objects that stood for its objects
    # once Python releases them. One it sent as the JVM exited had its connection reset, which
    # py4j logged as an ERROR with two tracebacks after the command's output (4 of 15
    # `lakehouse sql` runs): the client is marked disconnected, which py4j checks before each
    # such message, so that it sends none
    gateway._gateway_client.is_connected = False  # noqa: SLF001 - py4j's own guard for this
    process.stdin.close()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def repair_aborted_metastore(root: Path) -> None:
    """Remove a Derby metastore whose creation was killed half-way, so the next start works.

    Derby writes ``service.properties`` last when it creates a database. A process killed
    before that (e.g. SIGKILL during the first ``lakehouse ingest`` of a new LAKEHOUSE_DIR)
    leaves a directory Derby refuses to boot (ERROR XBM0A) forever after; one killed while it
    wrote the file leaves it without ``derby.serviceProtocol`` (ERROR XCY03). Such a database
    was never usable, so it holds no table registrations: deleting it loses nothing. A later
    rewrite of the file keeps the previous one as ``service.propertiesold`` until it is done,
    from which Derby restores it itself: with that file present nothing is removed.
    """
    db = root / "metastore_db"
    if not db.is_dir() or (db / "service.propertiesold").exists():
        return
    properties = db / "service.properties"
    if not properties.exists() or "derby.serviceProtocol" not in properties.read_text(errors="replace"):
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
    quiet_query_errors()
    return spark


def quiet_query_errors() -> None:
    """Keep pyspark from printing every SQL error it raises before its caller has seen it.

    pyspark 4 logs each error that has a query context (an unknown column, a syntax error) to
    stderr as a line of JSON with the whole Java stack trace, some 10,000 characters, and then
    raises it; `lakehouse sql` and dbt report the raised error themselves, in a line or two
    (`lakehouse sql "select nope from t"`: the JSON line, then `sql failed: [UNRESOLVED_COLUMN...`)."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
