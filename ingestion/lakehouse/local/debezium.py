"""Debezium's embedded engine into Kafka (``lakehouse debezium run``).

Debezium 3.5.0.Final (engine, PostgreSQL and MariaDB connectors) comes from Maven Central like the
Kafka broker: ``jvm/debezium-pom.xml`` resolved into ``.cache/jars/debezium``, apart from Spark's
jars. The harness's own program (``jvm/debezium/src``, :class:`DebeziumToKafka`) is compiled with
javac against them into ``.cache/debezium-harness``. It produces each event as Kafka Connect with
Debezium's JsonConverter would (schemas enabled, tombstones as null values) to the topic the event
names, so the lakehouse sees what a production deployment writes.

Offsets (and MariaDB's schema history) are files under the source's folder (``debezium/<name>``),
so a second run resumes where the first stopped, replaying at most a batch: the lakehouse must
take duplicates in its stride. Every connector option stays at Debezium's default except those
:func:`engine_properties` sets; callers add their own (``--property k=v``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from lakehouse.jars import SYNCED_MARKER, resolve_pom
from lakehouse.local import HarnessError, progress
from lakehouse.paths import PROJECT_DIR

DEBEZIUM_POM = PROJECT_DIR / "jvm" / "debezium-pom.xml"
DEBEZIUM_JARS_DIR = PROJECT_DIR / ".cache" / "jars" / "debezium"
HARNESS_SRC = PROJECT_DIR / "jvm" / "debezium" / "src" / "main" / "java"
HARNESS_DIR = PROJECT_DIR / ".cache" / "debezium-harness"
MAIN_CLASS = "cdc.lakehouse.harness.DebeziumToKafka"
CONNECTORS = ("postgres", "mariadb")


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.read_bytes())
    return h.hexdigest()


def ensure_jars(force: bool = False) -> Path:
    """Resolve Debezium's jars into ``.cache/jars/debezium`` unless resolved from this very pom."""
    if force or not (DEBEZIUM_JARS_DIR / SYNCED_MARKER).is_file():
        progress(f"resolving {DEBEZIUM_POM.relative_to(PROJECT_DIR)} from Maven Central into {DEBEZIUM_JARS_DIR}")
    return resolve_pom(DEBEZIUM_POM, DEBEZIUM_JARS_DIR, "debezium-embedded-*.jar", HarnessError, force)


def ensure_program() -> Path:
    """Compile :data:`MAIN_CLASS` against Debezium's jars unless compiled from these sources; its classes folder."""
    jars = ensure_jars()
    sources = sorted(HARNESS_SRC.rglob("*.java"))
    classes = HARNESS_DIR / "classes"
    marker = HARNESS_DIR / ".compiled"
    digest = _digest(*sources, jars / SYNCED_MARKER)
    if marker.is_file() and marker.read_text().strip() == digest:
        return classes
    progress(f"compiling {MAIN_CLASS} ({HARNESS_SRC.relative_to(PROJECT_DIR)}) into {classes}")
    HARNESS_DIR.mkdir(parents=True, exist_ok=True)
    cmd = ["javac", "--release", "17", "-Xlint:all,-path,-processing", "-d", str(classes),
           "-cp", str(jars / "*"), *map(str, sources)]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise HarnessError("javac not found: a JDK 17 compiles the Debezium harness") from exc
    if done.returncode != 0:
        raise HarnessError(f"javac of {HARNESS_SRC} failed:\n{(done.stdout + done.stderr).strip()[-4000:]}")
    marker.write_text(digest + "\n")
    return classes


def engine_properties(
    connector: str, connection: dict[str, str], state_dir: Path, name: str, topic_prefix: str,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:  # fmt: skip
    """The engine's configuration: ``connection`` (from the source module), file-backed offsets
    (and schema history) in ``state_dir``, and only the options the harness needs; ``extra`` wins."""
    if connector not in CONNECTORS:
        raise HarnessError(f"unknown connector {connector!r}: one of {', '.join(CONNECTORS)}")
    props = {
        "name": name,
        "topic.prefix": topic_prefix,
        **connection,
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(state_dir / "offsets.dat"),
        # TRUNCATE is one of Debezium's skipped operations by default; the lakehouse handles it.
        "skipped.operations": "none",
    }
    if connector == "postgres":
        slot = name.replace("-", "_").lower()
        props |= {"plugin.name": "pgoutput", "slot.name": slot, "publication.name": f"{slot}_publication"}
    else:
        props |= {
            "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
            "schema.history.internal.file.filename": str(state_dir / "schema-history.dat"),
            # BIGINT UNSIGNED of 2^63 and above would wrap negative in the default long mode.
            "bigint.unsigned.handling.mode": "precise",
        }
    return props | (extra or {})


def _properties_text(props: dict[str, str]) -> str:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")

    return "".join(f"{escape(k)}={escape(v)}\n" for k, v in sorted(props.items()))


def command(props: dict[str, str], bootstrap: str, state_dir: Path, until_idle: float | None) -> list[str]:
    """The java command line of one run; writes ``engine.properties`` (0600: it holds a password)."""
    classes = ensure_program()
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "engine.properties"
    path.write_text(_properties_text(props))
    path.chmod(0o600)
    java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else "java"
    cmd = [
        java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        f"-Dorg.slf4j.simpleLogger.logFile={state_dir / 'debezium.log'}",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-cp", f"{classes}:{DEBEZIUM_JARS_DIR / '*'}", MAIN_CLASS, str(path), bootstrap,
    ]  # fmt: skip
    if until_idle is not None:
        cmd.append(str(until_idle))
    return cmd


def run(
    props: dict[str, str], bootstrap: str, state_dir: Path, until_idle: float | None, timeout: float | None = None
) -> None:
    """Run the engine in the foreground (stderr passed through) until it stops; HarnessError if it failed."""
    cmd = command(props, bootstrap, state_dir, until_idle)
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(f"Debezium ({props['connector.class']}) still ran after {timeout:.0f}s; log: "
                           f"{state_dir / 'debezium.log'}") from exc
    if done.returncode != 0:
        log = state_dir / "debezium.log"
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:]) if log.is_file() else ""
        raise HarnessError(f"Debezium ({props['connector.class']}) exited with code {done.returncode}; "
                           f"log {log}:\n{tail}")
