"""Keep only the Maven-resolved jars that the pyspark wheel does not already ship.

``mvn dependency:copy-dependencies`` copies every transitive jar of Delta and the Kafka
connector, including Hadoop, Jackson, Parquet and Scala jars that pyspark carries in other
versions. Two versions of one artifact on the classpath break Spark in odd ways, so
``make jars`` runs this module to copy into ``.cache/jars/spark`` only the artifacts pyspark lacks.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

_VERSION = re.compile(r"-\d[\w.]*(?:-[\w.]+)*\.jar$")


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
