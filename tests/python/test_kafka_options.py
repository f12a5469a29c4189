"""The Kafka loader's option handling, without a broker: secrets, config files, checkpoint names."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from lakehouse.cli import build_parser
from lakehouse.kafka_loader import LoaderError
from lakehouse.kafka_loader.offsets import describe_progress
from lakehouse.kafka_loader.options import (
    MASK,
    checkpoint_name,
    client_options,
    parse_properties,
    parse_topics,
    source_options,
)
from lakehouse.local import broker


def _args(*extra: str) -> argparse.Namespace:
    return build_parser().parse_args(["ingest", "--bootstrap-servers", "h:9092", *extra])


def test_properties_file_shapes() -> None:
    text = (
        "# comment\n! also a comment\n\nsecurity.protocol=SASL_SSL\n"
        "sasl.mechanism : SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="u" password="p";\n'
    )
    assert parse_properties(text, "f") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="u" password="p";',
    }


def test_secrets_from_env_and_file_are_resolved_and_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAAS", 'PlainLoginModule required username="u" password="s3cr3t-pw";')
    secret_file = tmp_path / "ts-pass"
    secret_file.write_text("trust-me-123\n")
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_SSL\nssl.truststore.password=file:" +
                      str(secret_file) + "\n")  # fmt: skip
    client = client_options(_args(
        "--topics", "t", "--kafka-config", str(config),
        "--kafka-option", "sasl.jaas.config=env:JAAS",
        "--kafka-option", "kafka.client.id=loader-1",
        "--kafka-option", "security.protocol=SASL_PLAINTEXT",  # later wins over the file
    ))  # fmt: skip
    assert client.options["ssl.truststore.password"] == "trust-me-123"
    assert client.options["sasl.jaas.config"].endswith('password="s3cr3t-pw";')
    assert client.options["client.id"] == "loader-1"
    assert client.options["security.protocol"] == "SASL_PLAINTEXT"
    assert client.options["bootstrap.servers"] == "h:9092"
    masked = client.masked()
    assert masked["sasl.jaas.config"] == masked["ssl.truststore.password"] == MASK
    assert masked["client.id"] == "loader-1"
    leak = "failed: password=s3cr3t-pw and trust-me-123 and " + client.options["sasl.jaas.config"]
    scrubbed = client.scrub(leak)
    assert "s3cr3t-pw" not in scrubbed and "trust-me-123" not in scrubbed
    spark = source_options(_args("--topics", "a,b"), client, ["a", "b"])
    assert spark["kafka.sasl.jaas.config"] == client.options["sasl.jaas.config"]
    assert spark["subscribe"] == "a,b" and spark["includeHeaders"] == "true"
    assert spark["startingOffsets"] == "earliest" and spark["failOnDataLoss"] == "true"


def test_option_errors_name_the_option_not_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE", raising=False)
    with pytest.raises(LoaderError, match="sasl.jaas.config: environment variable NOPE"):
        client_options(_args("--topics", "t", "--kafka-option", "sasl.jaas.config=env:NOPE"))
    with pytest.raises(LoaderError, match="auto.offset.reset cannot be set.*--starting-offsets"):
        client_options(_args("--topics", "t", "--kafka-option", "auto.offset.reset=latest"))
    with pytest.raises(LoaderError, match="KEY=VALUE"):
        client_options(_args("--topics", "t", "--kafka-option", "no-equals-sign"))


def test_checkpoint_name_is_stable_per_subscription() -> None:
    assert parse_topics(" b, a,,b ") == ["b", "a"]
    name = checkpoint_name(["orders", "customers"], None)
    assert name == checkpoint_name(["customers", "orders", "orders"], None)
    assert name.startswith("kafka-topics-customers+orders-")
    assert name != checkpoint_name(["orders"], None)
    pattern = checkpoint_name(None, r"dbserver1\.inventory\..*")
    assert pattern.startswith("kafka-pattern-dbserver1") and "/" not in pattern
    assert ":" not in pattern  # Hadoop paths reject colons
    assert pattern != checkpoint_name(None, r"dbserver1\.inventory\..+")


def test_progress_line_shows_rate_offsets_and_lag() -> None:
    progress = {
        "batchId": 3, "numInputRows": 150, "processedRowsPerSecond": 75.0,
        "durationMs": {"triggerExecution": 2000},
        "sources": [{
            "startOffset": {"t": {"0": 100, "1": 50}},
            "endOffset": {"t": {"0": 200, "1": 100}},
            "latestOffset": {"t": {"0": 260, "1": 100}},
        }],
    }  # fmt: skip
    line = describe_progress(progress)
    assert "150 records in 2.0s (75 rec/s)" in line
    assert "t[0] 100->200" in line and "t[1] 50->100" in line
    assert "lag 60 (t[0] 60)" in line


def test_broker_config_is_loopback_only() -> None:
    props = broker._server_properties(Path("/x"), 9092, 9093, 9094, "pw")
    listeners = [line for line in props.splitlines() if "listeners=" in line]
    assert listeners and all(
        "://" not in part or "127.0.0.1" in part for line in listeners for part in line.split(",")
    )
    assert "SASL_PLAINTEXT://127.0.0.1:9094" in props
    cluster_id = broker._cluster_id()
    assert len(cluster_id) == 22 and not cluster_id.startswith("-")


def test_spark_55271_is_recognised_and_nothing_else() -> None:
    from lakehouse.kafka_loader.stream import _is_replay_metrics_bug

    seen = (
        "[STREAM_FAILED] Query [id = 0ffa58d0, runId = ab9debdc] terminated with exception: "
        'Cannot invoke "scala.collection.IterableOps.map(scala.Function1)" because the return '
        'value of "scala.Option.get()" is null SQLSTATE: XXKST'
    )
    assert _is_replay_metrics_bug(Exception(seen))
    other = "terminated with exception: Cannot fetch offset 5 (TopicPartition: t-0)"
    assert not _is_replay_metrics_bug(Exception(other))


def test_half_created_metastore_is_removed_and_a_real_one_kept(tmp_path: Path) -> None:
    """A loader SIGKILLed while Derby created the metastore must not break the next start."""
    from lakehouse.session import repair_aborted_metastore

    aborted = tmp_path / "a" / "metastore_db"
    (aborted / "seg0").mkdir(parents=True)
    (aborted / "db.lck").write_text("")
    repair_aborted_metastore(aborted.parent)
    assert not aborted.exists()
    # killed while writing service.properties: the file lacks the protocol Derby boots by
    truncated = tmp_path / "c" / "metastore_db"
    (truncated / "seg0").mkdir(parents=True)
    (truncated / "service.properties").write_text("#--- last line\nderby.storage.pageSize=")
    repair_aborted_metastore(truncated.parent)
    assert not truncated.exists()
    real = tmp_path / "b" / "metastore_db"
    (real / "seg0").mkdir(parents=True)
    (real / "service.properties").write_text("derby.serviceProtocol=org.apache.derby.database.Database\n")
    repair_aborted_metastore(real.parent)
    assert (real / "service.properties").exists()
    # a rewrite in progress keeps the old file beside it, and Derby restores from it
    rewriting = tmp_path / "d" / "metastore_db"
    (rewriting / "seg0").mkdir(parents=True)
    (rewriting / "service.propertiesold").write_text("derby.serviceProtocol=org.apache.derby.database.Database\n")
    (rewriting / "service.properties").write_text("")
    repair_aborted_metastore(rewriting.parent)
    assert (rewriting / "service.propertiesold").exists()


def test_table_creation_killed_half_way_is_cleared(lakehouse) -> None:  # noqa: ANN001
    """Delta commits a new table before the metastore knows it; a kill in between must not
    make every later ingest fail with DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION."""
    import shutil

    from lakehouse import bronze

    spark = lakehouse.spark
    columns = bronze.DDL.split("(", 1)[1].rsplit(")\nusing", 1)[0]
    spark.sql(f"create table default.aborted_create ({columns}) using delta")
    location = lakehouse.root / "warehouse" / "bronze.db" / "kafka_records"
    spark.sql("create database if not exists bronze")
    shutil.copytree(lakehouse.root / "warehouse" / "aborted_create", location)
    spark.sql("drop table default.aborted_create")
    bronze.ensure_bronze(spark)
    assert spark.table(bronze.TABLE).count() == 0
