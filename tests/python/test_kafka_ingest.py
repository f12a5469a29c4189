"""``lakehouse ingest --bootstrap-servers`` against a real Kafka broker, through the CLI.

What a CDC pipeline throws at bronze, byte for byte: Debezium tombstones (null value), null,
empty and binary keys, values that are not UTF-8, a 2 MB value, headers (binary, repeated,
null-valued); a keyed topic with three partitions and a second topic in the same run; re-runs
that land nothing; SASL with the password from the environment and never printed; --follow, and --follow with
builds in the loader's own process.
"""

from __future__ import annotations

import base64
import random
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from kafka_fixtures import (
    LAKEHOUSE,
    PROJECT,
    Broker,
    Record,
    ingest_kafka,
    kafka_broker_fixture,  # noqa: F401 - registers the kafka_broker fixture
    lakehouse_env,
    sql_json,
    summary,
)

B64 = base64.b64encode
SAMPLE = PROJECT / "samples" / "debezium_inventory.jsonl"


def _b64(data: bytes | None) -> str | None:
    return None if data is None else B64(data).decode("ascii")


def edge_records() -> list[Record]:
    """Records that break naive loaders: every one must come back exactly as produced."""
    big = random.Random(5).randbytes(2 * 1024 * 1024 + 17)
    return [
        Record(
            b'{"id":1}', b'{"op":"c","after":{"id":1,"name":"caf\xc3\xa9"}}',
            headers=[("trace", b"abc"), ("bin", b"\x00\xff\xfe"), ("dup", b"1"),
                     ("dup", b"2"), ("nullh", None)],
            timestamp_ms=1_700_000_000_123,
        ),
        Record(b'{"id":1}', None),  # Debezium tombstone after a delete
        Record(None, b'{"op":"c","after":{"id":2}}'),  # no key
        Record(b"\x00\x01\xfe\xff", b"\x80\x81 not utf-8 \xc3\x28 \xff"),  # binary everything
        Record(b"", b""),  # empty, not null
        Record(None, None),  # neither key nor value
        Record(b"big", big),  # above Kafka's 1 MB default record size
        Record(b"uni", "ünï \u2028 😀 \\u0000 \"q\"".encode()),
    ]  # fmt: skip


def keyed_records(count: int = 300) -> list[Record]:
    """Keyed changes of 20 rows: one key always goes to one partition, in order."""
    return [
        Record(f"row-{i % 20}".encode(), f'{{"seq":{i},"row":{i % 20}}}'.encode())
        for i in range(count)
    ]


def _bronze(root: Path, topics: list[str]) -> dict[tuple[str, int, int], dict]:
    quoted = ", ".join(f"'{t}'" for t in topics)
    rows = sql_json(
        root,
        "select topic, partition, offset, key, value, headers, format, source, "
        "unix_millis(timestamp) as ts_ms "
        f"from bronze.kafka_records where topic in ({quoted})",
    )
    return {(r["topic"], r["partition"], r["offset"]): r for r in rows}


def test_real_world_records_land_byte_exact_from_two_topics(
    kafka_broker: Broker, tmp_path: Path
) -> None:
    kafka_broker.create_topic("edge", 1)
    kafka_broker.create_topic("keyed", 3)
    edge = kafka_broker.produce("edge", edge_records())
    keyed = kafka_broker.produce("keyed", keyed_records())

    proc = ingest_kafka(
        tmp_path, kafka_broker.bootstrap, "--topics", "edge,keyed", "--format", "debezium-json"
    )
    assert summary(proc) == {"read": len(edge) + len(keyed), "landed": len(edge) + len(keyed),
                             "skipped": 0}  # fmt: skip
    assert re.search(r"batch 0: \d+ records", proc.stderr), proc.stderr[-2000:]

    bronze = _bronze(tmp_path, ["edge", "keyed"])
    assert len(bronze) == len(edge) + len(keyed)
    for topic, records in (("edge", edge), ("keyed", keyed)):
        for rec in records:
            row = bronze[(topic, rec.partition, rec.offset)]
            where = f"{topic}[{rec.partition}]@{rec.offset}"
            assert row["key"] == _b64(rec.key), where
            assert row["value"] == _b64(rec.value), where
            assert row["format"] == "debezium-json" and row["source"] == "kafka", where
            if rec.headers is None:
                assert row["headers"] in (None, []), where
            else:
                got = [(h["key"], h["value"]) for h in row["headers"]]
                assert got == [(k, _b64(v)) for k, v in rec.headers], where
            if rec.timestamp_ms is not None:
                assert row["ts_ms"] == rec.timestamp_ms, where

    # Three partitions used, each key in exactly one partition, offsets in production order.
    by_key: dict[bytes, set[int]] = {}
    for rec in keyed:
        by_key.setdefault(rec.key or b"", set()).add(rec.partition or 0)
    assert all(len(parts) == 1 for parts in by_key.values())
    assert {r.partition for r in keyed} == {0, 1, 2}
    for part in range(3):
        seqs = [int(re.search(rb'"seq":(\d+)', r.value or b"")[1]) for r in sorted(
            (r for r in keyed if r.partition == part), key=lambda r: r.offset or 0)]
        assert seqs == sorted(seqs)

    # Caught up: the same command again lands nothing, quickly, from the checkpoint.
    again = ingest_kafka(tmp_path, kafka_broker.bootstrap, "--topics", "keyed,edge")
    assert summary(again) == {"read": 0, "landed": 0, "skipped": 0}
    assert "resuming from checkpoint" in again.stderr


def test_sasl_pattern_follow_and_secrets_never_printed(
    kafka_broker: Broker, tmp_path: Path
) -> None:
    """SASL/PLAIN via passthrough options, password from env:; --follow picks up new records
    and new topics matching the pattern; SIGTERM stops it cleanly with a summary."""
    kafka_broker.create_topic("sasl.orders", 2)
    kafka_broker.produce("sasl.orders", [Record(b"k%d" % i, b"v%d" % i) for i in range(40)])
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{kafka_broker.sasl_user}" password="{kafka_broker.sasl_password}";'
    )
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n")
    args = [
        LAKEHOUSE, "ingest", "--bootstrap-servers", kafka_broker.sasl_bootstrap,
        "--topic-pattern", r"sasl\..*", "--kafka-config", str(config),
        "--kafka-option", "sasl.jaas.config=env:TEST_KAFKA_JAAS",
        "--follow", "--trigger-interval", "1 second",
    ]  # fmt: skip
    root = tmp_path / "lakehouse"
    # stdout (the summary) goes to a file and stderr is read by one thread only: two readers
    # of one pipe (a thread and communicate()) each get part of the lines.
    out_file = tmp_path / "stdout.txt"
    with out_file.open("w") as out_handle:
        proc = subprocess.Popen(
            args, env=lakehouse_env(root, TEST_KAFKA_JAAS=jaas), cwd=PROJECT, text=True,
            stdout=out_handle, stderr=subprocess.PIPE,
        )  # fmt: skip
    err_lines: list[str] = []
    reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr or []), daemon=True)
    reader.start()

    def landed_so_far() -> int:
        return sum(int(m[1]) for line in list(err_lines)
                   if (m := re.search(r"batch \d+: (\d+) records", line)))  # fmt: skip

    def wait_for(total: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while landed_so_far() < total and time.monotonic() < deadline:
            assert proc.poll() is None, "".join(err_lines)[-4000:]
            time.sleep(0.5)
        assert landed_so_far() == total, "".join(err_lines)[-4000:]

    try:
        wait_for(40, timeout=180)
        kafka_broker.produce("sasl.orders", [Record(b"late", b"late-%d" % i) for i in range(5)])
        kafka_broker.create_topic("sasl.customers", 1)  # discovered by the pattern
        kafka_broker.produce("sasl.customers", [Record(None, b"c%d" % i) for i in range(7)])
        wait_for(52, timeout=90)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        reader.join(timeout=10)
    out = out_file.read_text()
    stderr = "".join(err_lines)
    assert proc.returncode == 0, stderr[-4000:]
    done = summary(subprocess.CompletedProcess(args, 0, out, stderr))
    assert done == {"read": 52, "landed": 52, "skipped": 0}
    assert "SIGTERM" in stderr
    assert "sasl.jaas.config=****" in stderr
    for text in (out, stderr):
        assert kafka_broker.sasl_password not in text
    for path in root.rglob("*"):
        if path.is_file() and "checkpoints" in path.parts:
            assert kafka_broker.sasl_password.encode() not in path.read_bytes(), path

    # A wrong password fails fast, names the servers, and still prints no secret.
    wrong = jaas.replace(kafka_broker.sasl_password, "not-the-password-123")
    bad = ingest_kafka(
        tmp_path / "other", kafka_broker.sasl_bootstrap, "--topics", "sasl.orders",
        "--kafka-config", str(config), "--kafka-option", "sasl.jaas.config=env:TEST_KAFKA_JAAS",
        check=False, TEST_KAFKA_JAAS=wrong,
    )  # fmt: skip
    assert bad.returncode == 1, bad.stderr[-3000:]
    assert f"cannot list topics on {kafka_broker.sasl_bootstrap}" in bad.stderr
    assert "not-the-password-123" not in bad.stdout + bad.stderr


def test_missing_topic_is_named(kafka_broker: Broker, tmp_path: Path) -> None:
    proc = ingest_kafka(
        tmp_path, kafka_broker.bootstrap, "--topics", "no.such.topic", check=False
    )
    assert proc.returncode == 1
    assert "no.such.topic do not exist on" in proc.stderr


def test_follow_builds_in_the_loaders_process_as_records_land(kafka_broker: Broker, tmp_path: Path) -> None:
    """``--follow --build``: the loader builds, in its own process and Spark session, when records
    landed since its last build; with Derby no other process could build while it runs. With
    ``--test-every`` the builds leave the data tests out and they run apart. Once stopped, gold
    holds every change of the sample's two tables."""
    import json

    envelopes = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    topics = {}
    for envelope in envelopes:
        topics.setdefault(f"follow.{envelope['topic']}", []).append(
            Record(*(None if envelope[part] is None else envelope[part].encode() for part in ("key", "payload"))))
    (customers, first), (products, second) = sorted(topics.items())
    for topic in (customers, products):
        kafka_broker.create_topic(topic, 1)
    kafka_broker.produce(customers, first)
    root = tmp_path / "lakehouse"
    args = [
        LAKEHOUSE, "ingest", "--bootstrap-servers", kafka_broker.bootstrap,
        "--topics", f"{customers},{products}", "--format", "debezium-json",
        "--follow", "--trigger-interval", "1 second",
        "--build", "--build-every", "1", "--build-args", "--select +cdc_current_state",
        "--test-every", "3600",
    ]  # fmt: skip
    out_file = tmp_path / "stdout.txt"
    with out_file.open("w") as out_handle:
        proc = subprocess.Popen(args, env=lakehouse_env(root), cwd=PROJECT, text=True,
                                stdout=out_handle, stderr=subprocess.PIPE)  # fmt: skip
    err_lines: list[str] = []
    reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr or []), daemon=True)
    reader.start()

    def built_after(landed: int, timeout: float) -> int:
        """The number of the first build that started with ``landed`` records landed, once done."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert proc.poll() is None, "".join(err_lines)[-6000:]
            text = "".join(err_lines)
            for number in re.findall(rf"build (\d+): {landed} records landed by this loader", text):
                if f"build {number}: done in" in text:
                    return int(number)
            time.sleep(0.5)
        raise AssertionError(f"no build after {landed} records landed:\n" + "".join(err_lines)[-6000:])

    try:
        one = built_after(len(first), timeout=600)
        kafka_broker.produce(products, second)
        two = built_after(len(first) + len(second), timeout=600)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)
        reader.join(timeout=10)
    stderr = "".join(err_lines)
    assert proc.returncode == 0, stderr[-6000:]
    assert two > one
    builds = re.findall(r"builds: (\d+)(?:; tests: \d+)?$", stderr, re.MULTILINE)
    assert builds and int(builds[-1]) >= two, stderr[-3000:]
    assert not re.search(r"build \d+ failed", stderr), stderr[-6000:]
    # --test-every: the builds left the data tests out, and they ran once, after the first build
    # that passed (the next were due an hour later)
    assert "running build --select +cdc_current_state --exclude-resource-type test" in stderr, stderr[-6000:]
    assert "tests 1: passed in" in stderr and "tests 2:" not in stderr, stderr[-6000:]
    assert re.search(r"builds: \d+; tests: 1$", stderr, re.MULTILINE), stderr[-3000:]
    out = out_file.read_text()
    assert out.count("Completed successfully") >= 3, out[-4000:]
    tested = re.findall(r"START test (\S+)", out)
    assert tested and len(tested) == len(set(tested)), out[-4000:]
    assert any(name.startswith("cdc_history_is_consistent") for name in tested), tested
    assert stderr.count("Setting default log level") == 1  # one JVM for the landing and every build
    live = sql_json(root, "select source_table, pk from gold.cdc_current_state order by source_table, pk")
    assert [(row["source_table"], row["pk"]) for row in live] == [
        ("customers", '{"id":1001}'), ("customers", '{"id":1002}'), ("customers", '{"id":1005}'),
        ("products", '{"id":101}'), ("products", '{"id":102}'),
    ]  # fmt: skip
