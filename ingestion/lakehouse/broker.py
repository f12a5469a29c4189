"""A real single-node Apache Kafka broker (KRaft, combined broker + controller) for development.

Why a real broker and not a mock: the loader's promises (byte-exact records, headers, large
values, exactly once across SIGKILL) are only worth what they are tested against, so tests and
``make kafka-up`` run the genuine ``kafka.Kafka`` server. It comes from Maven Central like the
Spark jars (``jvm/kafka-pom.xml`` resolved into ``.cache/jars/kafka``), so nothing but Maven
Central is needed and no tarball is downloaded.

One broker lives in one directory (default ``.cache/kafka`` in the checkout, or
``LAKEHOUSE_KAFKA_DIR``)::

    server.properties   generated at every start (ports may change between starts)
    log4j2.properties   broker logging into logs/
    data/               the KRaft metadata log and the topic partitions (kept across restarts)
    logs/server.log     the broker's log; logs/kafka.out its stdout/stderr (JVM errors)
    broker.json         pid and ports of the running broker (the pid file)

Every listener binds to 127.0.0.1 only: this broker is for this machine. The client port
defaults to 9092 (``LAKEHOUSE_KAFKA_PORT``); the controller port is picked free at each start.
Optionally a second, SASL_PLAINTEXT (mechanism PLAIN) listener lets the SASL passthrough of the
loader be tried and tested against a real authenticating broker.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from lakehouse.paths import PROJECT_DIR
from lakehouse.ports import free_port, port_in_use

KAFKA_POM = PROJECT_DIR / "jvm" / "kafka-pom.xml"
MAVEN_SETTINGS = PROJECT_DIR / "jvm" / "settings.xml"
MAVEN_REPO = PROJECT_DIR / ".cache" / "m2"
#: Broker jars (kafka_2.13 and its runtime dependencies), resolved by :func:`ensure_jars`.
KAFKA_JARS_DIR = PROJECT_DIR / ".cache" / "jars" / "kafka"
#: Marker written after a complete resolution; holds the hash of the pom it was resolved from.
_JARS_MARKER = ".synced"
DEFAULT_PORT = 9092
#: Largest record the dev broker accepts: above Kafka's 1 MB default so multi-MB CDC rows
#: (LOB columns) can be tried locally. Real clusters set their own ``message.max.bytes``.
MAX_MESSAGE_BYTES = 20 * 1024 * 1024
#: User of the optional SASL/PLAIN listener.
SASL_USER = "lakehouse"


class BrokerError(RuntimeError):
    """The broker could not be resolved, started, or stopped; the message says why."""


@dataclass(frozen=True)
class BrokerInfo:
    """A running broker as recorded in its ``broker.json``."""

    pid: int
    port: int
    controller_port: int
    directory: str
    sasl_port: int | None = None

    @property
    def bootstrap_servers(self) -> str:
        """What clients pass as ``bootstrap.servers`` (the PLAINTEXT listener)."""
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        """The SASL_PLAINTEXT listener, when the broker was started with one."""
        return f"127.0.0.1:{self.sasl_port}" if self.sasl_port else None


def broker_dir() -> Path:
    """The default broker directory: ``LAKEHOUSE_KAFKA_DIR`` or ``.cache/kafka`` (git-ignored)."""
    raw = os.environ.get("LAKEHOUSE_KAFKA_DIR")
    return Path(raw).expanduser().resolve() if raw else PROJECT_DIR / ".cache" / "kafka"


def default_port() -> int:
    """The default client port: ``LAKEHOUSE_KAFKA_PORT`` or 9092."""
    return int(os.environ.get("LAKEHOUSE_KAFKA_PORT", DEFAULT_PORT))


def _pom_digest() -> str:
    return hashlib.sha256(KAFKA_POM.read_bytes() + MAVEN_SETTINGS.read_bytes()).hexdigest()


def ensure_jars(force: bool = False) -> Path:
    """Resolve the broker jars from Maven Central into ``.cache/jars/kafka`` unless up to date.

    Up to date means the marker holds the digest of the current pom and settings, so editing
    ``jvm/kafka-pom.xml`` (e.g. a new Kafka version) re-resolves without stale jars left over.
    """
    marker = KAFKA_JARS_DIR / _JARS_MARKER
    digest = _pom_digest()
    if not force and marker.is_file() and marker.read_text().strip() == digest:
        return KAFKA_JARS_DIR
    if KAFKA_JARS_DIR.exists():
        for old in KAFKA_JARS_DIR.iterdir():
            old.unlink()
    cmd = [
        "mvn", "-q", "-B", "-s", str(MAVEN_SETTINGS), f"-Dmaven.repo.local={MAVEN_REPO}",
        "-f", str(KAFKA_POM), "dependency:copy-dependencies", "-DincludeScope=runtime",
        f"-DoutputDirectory={KAFKA_JARS_DIR}",
    ]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise BrokerError("mvn not found: Maven resolves the Kafka broker jars") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise BrokerError(f"resolving {KAFKA_POM.name} from Maven Central failed:\n{tail}")
    if not any(KAFKA_JARS_DIR.glob("kafka_2.13-*.jar")):
        raise BrokerError(f"{KAFKA_POM.name} resolved, but no kafka_2.13 jar in {KAFKA_JARS_DIR}")
    marker.write_text(digest + "\n")
    return KAFKA_JARS_DIR


def _cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting '-'.

    Same rule as ``org.apache.kafka.common.Uuid.randomUuid`` (a leading '-' would read as an
    option on a command line); generated here to spare a JVM start for ``random-uuid``.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


def _server_properties(
    directory: Path, port: int, controller_port: int, sasl_port: int | None, sasl_password: str
) -> str:
    listeners = [f"PLAINTEXT://127.0.0.1:{port}", f"CONTROLLER://127.0.0.1:{controller_port}"]
    protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
    advertised = [f"PLAINTEXT://127.0.0.1:{port}"]
    extra: list[str] = []
    if sasl_port:
        listeners.append(f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}")
        advertised.append(f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}")
        protocols.append("SASL_PLAINTEXT:SASL_PLAINTEXT")
        extra += [
            "sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config="
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{SASL_USER}="{sasl_password}";',
        ]
    lines = [
        "# Generated by lakehouse.broker at every start; edits are overwritten.",
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners={','.join(listeners)}",
        f"advertised.listeners={','.join(advertised)}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        f"listener.security.protocol.map={','.join(protocols)}",
        f"log.dirs={directory / 'data'}",
        "num.partitions=1",
        "auto.create.topics.enable=true",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        f"message.max.bytes={MAX_MESSAGE_BYTES}",
        f"replica.fetch.max.bytes={MAX_MESSAGE_BYTES}",
        *extra,
    ]
    return "\n".join(lines) + "\n"


def _log4j2_properties(logs: Path) -> str:
    return f"""\
# Broker logging (generated): INFO into logs/server.log, 3 x 10 MB at most.
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = {logs / "server.log"}
appender.file.filePattern = {logs / "server.log.%i"}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 10MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
"""


def _pid_alive_as_broker(pid: int, directory: Path) -> bool:
    """True when ``pid`` is a live ``kafka.Kafka`` of ``directory`` (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    args = [a.decode(errors="replace") for a in cmdline]
    return "kafka.Kafka" in args and str(directory / "server.properties") in args


def status(directory: Path | None = None) -> BrokerInfo | None:
    """The broker running from ``directory``, or None (a stale pid file is removed)."""
    directory = (directory or broker_dir()).resolve()
    pid_file = directory / "broker.json"
    try:
        info = BrokerInfo(**json.loads(pid_file.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if _pid_alive_as_broker(info.pid, directory):
        return info
    pid_file.unlink(missing_ok=True)
    return None


def _log_tail(directory: Path, lines: int = 25) -> str:
    chunks = []
    for name in ("kafka.out", "server.log"):
        path = directory / "logs" / name
        if path.is_file():
            text = path.read_text(errors="replace").strip().splitlines()[-lines:]
            if text:
                chunks.append(f"--- {path}\n" + "\n".join(text))
    return "\n".join(chunks) or "(no broker output)"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def _classpath() -> str:
    return str(ensure_jars() / "*")


def _format_storage(directory: Path) -> None:
    """Format the KRaft metadata log once; a formatted ``data/`` keeps its topics across starts."""
    if (directory / "data" / "meta.properties").is_file():
        return
    cmd = [
        _java(), f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
        "-cp", _classpath(), "kafka.tools.StorageTool", "format",
        "-t", _cluster_id(), "-c", str(directory / "server.properties"),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BrokerError(
            f"formatting Kafka storage in {directory / 'data'} failed:\n"
            + (done.stdout + done.stderr).strip()
        )


def start(
    port: int | None = None,
    directory: Path | None = None,
    *,
    sasl_port: int | None = None,
    sasl_password: str | None = None,
    timeout: float = 90.0,
    heap: str = "768m",
) -> BrokerInfo:
    """Start the broker of ``directory`` on ``port`` (loopback) and wait until it serves clients.

    Already running from the same directory on the same port: returned as is. The process is
    detached (own session), so it outlives a ``lakehouse kafka up`` that started it.
    """
    directory = (directory or broker_dir()).resolve()
    port = port or default_port()
    running = status(directory)
    if running:
        if running.port != port:
            raise BrokerError(
                f"a broker of {directory} already runs on port {running.port} "
                f"(pid {running.pid}); stop it first (lakehouse kafka down)"
            )
        return running
    for p in (port, sasl_port):
        if p and port_in_use(p):
            raise BrokerError(f"port {p} on 127.0.0.1 is in use: choose another with --port")
    if sasl_port and not sasl_password:
        raise BrokerError("a SASL listener needs a password (LAKEHOUSE_KAFKA_SASL_PASSWORD)")
    if sasl_password and any(c in sasl_password for c in '"\\\n'):
        raise BrokerError("the SASL password must not contain quotes, backslashes or newlines")
    logs = directory / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (directory / "data").mkdir(exist_ok=True)
    controller_port = free_port(avoid=(port, sasl_port))
    props = directory / "server.properties"
    props.write_text(
        _server_properties(directory, port, controller_port, sasl_port, sasl_password or "")
    )
    props.chmod(0o600)  # may hold the SASL password
    (directory / "log4j2.properties").write_text(_log4j2_properties(logs))
    _format_storage(directory)
    cmd = [
        _java(), f"-Xmx{heap}", "-Xms128m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={logs}",
        "-cp", _classpath(), "kafka.Kafka", str(props),
    ]  # fmt: skip
    with open(logs / "kafka.out", "ab") as out:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            cwd=directory, start_new_session=True,
        )  # fmt: skip
    info = BrokerInfo(proc.pid, port, controller_port, str(directory), sasl_port)
    (directory / "broker.json").write_text(json.dumps(asdict(info)) + "\n")
    try:
        wait_until_ready(info, timeout=timeout, process=proc)
    except BaseException:
        _terminate(proc.pid, directory, grace=10)
        raise
    return info


def wait_until_ready(
    info: BrokerInfo, timeout: float = 90.0, process: subprocess.Popen | None = None
) -> None:
    """Block until the broker answers a metadata request listing itself, or raise.

    An open port is not enough: the broker accepts connections before its KRaft controller
    has registered it, and clients would then see no brokers. The metadata answer is the check.
    """
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    admin = AdminClient({"bootstrap.servers": info.bootstrap_servers, "log_level": 0})
    last_error = "no answer"
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise BrokerError(
                f"the Kafka broker exited with code {process.returncode} while starting:\n"
                + _log_tail(Path(info.directory))
            )
        try:
            metadata = admin.list_topics(timeout=2)
            if metadata.brokers:
                return
        except Exception as exc:  # noqa: BLE001 - KafkaException while the broker boots
            last_error = str(exc)
        time.sleep(0.3)
    raise BrokerError(
        f"the Kafka broker on {info.bootstrap_servers} was not ready after {timeout:.0f}s "
        f"({last_error}):\n" + _log_tail(Path(info.directory))
    )


def _terminate(pid: int, directory: Path, grace: float) -> None:
    """SIGTERM (controlled shutdown flushes the logs), SIGKILL after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap when it is our child
        if not _pid_alive_as_broker(pid, directory):
            break
        time.sleep(0.2)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    (directory / "broker.json").unlink(missing_ok=True)


def stop(directory: Path | None = None, grace: float = 30.0) -> BrokerInfo | None:
    """Stop the broker of ``directory``; returns what was stopped (None: nothing ran)."""
    directory = (directory or broker_dir()).resolve()
    info = status(directory)
    if info is not None:
        _terminate(info.pid, directory, grace)
    return info
