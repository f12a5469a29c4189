"""Where things live: the project checkout, the JVM jar cache and the lakehouse directory.

Every path is resolved here so that the loader, `lakehouse sql` and the dbt profile agree on
one `LAKEHOUSE_DIR` and one jar folder whatever the caller's working directory is.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The repository checkout (the package is installed editable from ``ingestion/``).
PROJECT_DIR = Path(__file__).resolve().parents[2]

#: Jars resolved from Maven Central by ``make jars`` that the pyspark wheel lacks.
SPARK_JARS_DIR = PROJECT_DIR / ".cache" / "jars" / "spark"


def lakehouse_dir() -> Path:
    """The lakehouse root from ``LAKEHOUSE_DIR`` (default ``./lakehouse``), made absolute."""
    return Path(os.environ.get("LAKEHOUSE_DIR", "lakehouse")).expanduser().resolve()

#: Spark's log4j2 configuration (errors only), used by every session of the project.
LOG4J_CONFIG = Path(os.environ.get("LAKEHOUSE_LOG4J", PROJECT_DIR / "conf" / "log4j2.properties"))
