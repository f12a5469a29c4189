"""Jars from Maven Central: resolving a pom into a folder, and keeping only what pyspark lacks.

Every JVM program the project runs (the Kafka broker, Debezium's engine, Spark's extra jars)
comes from a pom under ``jvm/`` resolved with the ordinary ``mvn`` client into ``.cache``, so
:func:`resolve_pom` is the one way the project fetches jars.

``mvn dependency:copy-dependencies`` copies every transitive jar of Delta and the Kafka
connector, including Hadoop, Jackson, Parquet and Scala jars that pyspark carries in other
versions. Two versions of one artifact on the classpath break Spark in odd ways, so
``make jars`` runs this module to copy into ``.cache/jars/spark`` only the artifacts pyspark lacks.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from lakehouse.paths import PROJECT_DIR

MAVEN_SETTINGS = PROJECT_DIR / "jvm" / "settings.xml"
MAVEN_REPO = PROJECT_DIR / ".cache" / "m2"
#: Written into a resolved folder after a complete resolution: the digest of its pom and settings.
SYNCED_MARKER = ".synced"

_VERSION = re.compile(r"-\d[\w.]*(?:-[\w.]+)*\.jar$")


def resolve_pom(pom: Path, dest: Path, expected: str, error: type[Exception], force: bool = False) -> Path:
    """Resolve ``pom``'s runtime jars into ``dest`` unless they were resolved from this very pom.

    Up to date means ``dest``'s marker holds the digest of the pom and the Maven settings, so
    editing the pom (a new version) re-resolves without stale jars left over. ``expected`` is a
    glob that must match after resolving (the program's main jar); failures raise ``error``
    with Maven's last lines.
    """
    marker = dest / SYNCED_MARKER
    digest = hashlib.sha256(pom.read_bytes() + MAVEN_SETTINGS.read_bytes()).hexdigest()
    if not force and marker.is_file() and marker.read_text().strip() == digest:
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.iterdir():
        old.unlink()
    cmd = [
        "mvn", "-q", "-B", "-s", str(MAVEN_SETTINGS), f"-Dmaven.repo.local={MAVEN_REPO}",
        "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={dest}",
    ]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise error(f"mvn not found: Maven resolves {pom.name}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise error(f"resolving {pom.name} from Maven Central failed:\n{tail}")
    if not any(dest.glob(expected)):
        raise error(f"{pom.name} resolved, but no {expected} in {dest}")
    marker.write_text(digest + "\n")
    return dest


def artifact(jar: str) -> str:
    """``delta-spark_4.1_2.13-4.4.0.jar`` -> ``delta-spark_4.1_2.13`` (version stripped)."""
    return _VERSION.sub("", jar)


def sync(resolved: Path, target: Path) -> list[str]:
    """Copy jars of ``resolved`` whose artifact pyspark lacks into ``target``; return their names."""
    import pyspark

    shipped = {artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.jar"):
        old.unlink()
    kept = []
    for jar in sorted(resolved.glob("*.jar")):
        if artifact(jar.name) not in shipped:
            shutil.copy2(jar, target / jar.name)
            kept.append(jar.name)
    return kept


if __name__ == "__main__":
    names = sync(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"jars: {len(names)} kept in {sys.argv[2]}: {', '.join(names)}")
