"""A real Kafka broker for the tests, and helpers to produce to it and to run the loader.

The broker is the project's own (:mod:`lakehouse.local.broker`): KRaft, single node, loopback, on
free ports, in a temporary directory, started once per test session and stopped at its end.
It also listens with SASL_PLAINTEXT/PLAIN so the SASL passthrough is tested for real.

Test modules import the fixture under another name (it is registered by its ``name``)::

    from kafka_fixtures import kafka_broker_fixture  # noqa: F401
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LAKEHOUSE = str(BIN / "lakehouse")


@dataclass
class Broker:
    """The running test broker: where to connect and the SASL user's password."""

    bootstrap: str
    sasl_bootstrap: str
    sasl_user: str
    sasl_password: str
    directory: Path

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create ``name`` and wait until the broker reports it (no auto-creation races)."""
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # must outlive the futures: a destroyed client fails them
        futures = admin.create_topics([NewTopic(name, partitions, 1)])
        for future in futures.values():
            future.result(timeout=30)

    def produce(self, topic: str, records: Sequence[Record]) -> list[Record]:
        """Produce ``records`` in order and fill in the partition/offset the broker assigned."""
        from confluent_kafka import Producer

        producer = Producer({
            "bootstrap.servers": self.bootstrap,
            "message.max.bytes": 16 * 1024 * 1024,
            "linger.ms": 5,
            "enable.idempotence": True,  # keeps per-partition order across retries
        })  # fmt: skip
        errors: list[str] = []

        def delivered(err: Any, msg: Any, record: Record) -> None:
            if err is not None:
                errors.append(f"{topic}: {err}")
            else:
                record.partition, record.offset = msg.partition(), msg.offset()

        for record in records:
            kwargs: dict[str, Any] = {"key": record.key, "value": record.value}
            if record.headers is not None:
                kwargs["headers"] = record.headers
            if record.timestamp_ms is not None:
                kwargs["timestamp"] = record.timestamp_ms
            if record.partition is not None:
                kwargs["partition"] = record.partition
            while True:
                try:
                    producer.produce(
                        topic, on_delivery=lambda e, m, r=record: delivered(e, m, r), **kwargs
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(60) == 0, f"{topic}: records still queued after 60s"
        assert not errors, errors
        return list(records)


@dataclass
class Record:
    """One Kafka record as produced; partition/offset are filled in by :meth:`Broker.produce`."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None = None
    timestamp_ms: int | None = None
    partition: int | None = None
    offset: int | None = field(default=None)


#: The session's broker. Each importing module registers its own copy of the fixture, so the
#: broker is kept here to start it once; the copy that started it stops it at session end.
_RUNNING: list[Broker] = []


@pytest.fixture(scope="session", name="kafka_broker")
def kafka_broker_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A real single-node Kafka (KRaft) on free loopback ports for the whole test session."""
    from lakehouse.local import broker
    from lakehouse.ports import free_ports

    if _RUNNING:
        yield _RUNNING[0]
        return
    try:
        broker.ensure_jars()
    except broker.BrokerError as exc:  # e.g. no Maven Central: a setup problem, not a test
        pytest.fail(f"cannot resolve the Kafka broker jars: {exc}")
    directory = tmp_path_factory.mktemp("kafka-broker")
    password = "pw-" + secrets.token_hex(12)
    port, sasl_port = free_ports(2)
    info = broker.start(port, directory, sasl_port=sasl_port, sasl_password=password)
    _RUNNING.append(Broker(
        info.bootstrap_servers, info.sasl_bootstrap_servers or "", broker.SASL_USER,
        password, directory,
    ))  # fmt: skip
    try:
        yield _RUNNING[0]
    finally:
        _RUNNING.clear()
        broker.stop(directory)


def lakehouse_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``lakehouse`` subprocess on the lakehouse ``root``."""
    env = dict(os.environ, LAKEHOUSE_DIR=str(root), **extra)
    # A small driver keeps several JVMs (pytest's own Spark, the broker, the loader) in RAM.
    env.setdefault("LAKEHOUSE_DRIVER_MEMORY", "2g")
    return env


def run_lakehouse(
    root: Path, *args: str, timeout: float = 600, check: bool = True, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``.venv/bin/lakehouse ARGS`` on ``root``; with ``check`` a failure shows its output."""
    proc = subprocess.run(
        [LAKEHOUSE, *args], env=lakehouse_env(root, **env), cwd=PROJECT,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, (
            f"lakehouse {' '.join(args)} exited {proc.returncode}:\n"
            f"{proc.stdout}\n{proc.stderr[-6000:]}"
        )
    return proc


def ingest_kafka(
    root: Path, bootstrap: str, *args: str, check: bool = True, **env: str
) -> subprocess.CompletedProcess[str]:
    """``lakehouse ingest --bootstrap-servers BOOTSTRAP ARGS`` on the lakehouse ``root``."""
    cmd = ("ingest", "--bootstrap-servers", bootstrap, *args)
    return run_lakehouse(root, *cmd, check=check, **env)


def summary(proc: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """The counts of the loader's last ``ingest kafka: read N, landed M, skipped K`` line."""
    import re

    lines = [line for line in proc.stdout.splitlines() if line.startswith("ingest kafka:")]
    assert lines, f"no summary line in:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    match = re.search(r"read (\d+), landed (\d+), skipped (\d+)", lines[-1])
    assert match, lines[-1]
    return dict(zip(("read", "landed", "skipped"), map(int, match.groups()), strict=True))


def sql_json(root: Path, query: str) -> list[dict[str, Any]]:
    """Rows of ``lakehouse sql QUERY --json`` (binary columns come back base64-encoded)."""
    out = run_lakehouse(root, "sql", query, "--json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def kill_group(proc: subprocess.Popen[Any], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the loader and everything it started (its JVM) at the same instant."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Wait until no process of group ``pgid`` is left (e.g. the JVM of a killed loader)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False
