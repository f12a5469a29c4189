"""The driver JVM's class archive: Java's class data sharing (CDS) for every Spark session.

Why: a Spark driver loads and verifies thousands of classes (Spark, Delta, Hive, Parquet,
the code paths of dbt's statements) before and while it runs its first queries, on each start:
every ``lakehouse build``, ``ingest``, ``sql``. A dynamic CDS archive (about 220 MB) holds
them already parsed and verified, and the JVM maps it at start, so every command reaches its
first query sooner.

``make setup`` writes the archive (``python -m lakehouse.cds``) by running a small build over
``samples/`` in a throw-away lakehouse, whose JVM dumps the classes it loaded as it exits
(``-XX:ArchiveClassesAtExit``). Every session then starts with ``-XX:SharedArchiveFile``
(:func:`java_options`; the dbt profile says the same). The JVM checks the archive against its
own build and class path: when either changed (a new JDK, new jars) or the archive is missing,
the JVM silently runs without it, only slower to start; ``make setup`` writes it again when
the jars change. ``LAKEHOUSE_CDS_OPTIONS`` replaces the options (empty: no archive).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lakehouse.paths import PROJECT_DIR

#: The archive, beside the jars it was made from.
ARCHIVE = PROJECT_DIR / ".cache" / "cds" / "lakehouse.jsa"
#: The sample the training build runs over.
SAMPLE = PROJECT_DIR / "samples" / "debezium_inventory.jsonl"
#: Use the archive; say nothing when it is missing or does not match this JVM and class path.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_options(archive: Path = ARCHIVE, *, required: bool = False) -> str:
    """JVM options that map ``archive``: quietly when it may be unusable, or ``required``
    (``-Xshare:on``: a JVM that cannot map it refuses to start, as the tests want)."""
    return f"-XX:SharedArchiveFile={archive} {'-Xshare:on' if required else _QUIET}"


def java_options() -> str:
    """The driver's class-sharing options: ``LAKEHOUSE_CDS_OPTIONS``, else the archive's."""
    return os.environ.get("LAKEHOUSE_CDS_OPTIONS", archive_options())


def _progress(message: str) -> None:
    print(f"[lakehouse cds] {message}", file=sys.stderr, flush=True)


def _run(cmd: list[str], env: dict[str, str], what: str) -> None:
    result = subprocess.run(cmd, cwd=PROJECT_DIR, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        raise SystemExit(f"[lakehouse cds] {what} failed (exit {result.returncode}):\n{tail}")


def build_archive(archive: Path = ARCHIVE) -> Path:
    """Write ``archive`` from a build of the sample in a throw-away lakehouse; returns its path.

    The ingest runs without the archive; the build's driver dumps it on exit. The build runs
    dbt in the process that started the session from :mod:`lakehouse.session` (see
    :func:`_training_build`). It uses the embedded Derby metastore whatever the environment
    says: the training lakehouse is not the user's.
    """
    work = archive.parent / "training"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    partial = archive.with_suffix(".jsa.part")
    partial.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEHOUSE_")}
    env.update(LAKEHOUSE_DIR=str(work / "lakehouse"), LAKEHOUSE_CDS_OPTIONS="")
    env.update(DBT_LOG_PATH=str(work / "logs"), DBT_TARGET_PATH=str(work / "target"))
    lakehouse = str(Path(sys.executable).with_name("lakehouse"))
    started = time.monotonic()
    _progress(f"landing {SAMPLE.name} in a training lakehouse ({work})")
    _run([lakehouse, "ingest", "--from-file", str(SAMPLE), "--format", "debezium-json"], env, "the training ingest")
    _progress("building it; the driver writes the class archive as it exits")
    env["LAKEHOUSE_CDS_OPTIONS"] = f"-XX:ArchiveClassesAtExit={partial}"
    _run([sys.executable, "-m", "lakehouse.cds", "--training-build"], env, "the training build")
    if not partial.is_file():
        raise SystemExit(f"[lakehouse cds] the training build's JVM wrote no archive at {partial}")
    partial.replace(archive)
    shutil.rmtree(work, ignore_errors=True)
    size = archive.stat().st_size / 2**20
    _progress(f"wrote {archive} ({size:.0f} MiB) in {time.monotonic() - started:.0f}s")
    return archive


def _training_build() -> int:
    """``dbt build`` of the training lakehouse, in a driver started by :mod:`lakehouse.session`.

    The archive records the class path as the dumping JVM was given it. The session module
    gives absolute paths, which a JVM started anywhere matches (``lakehouse sql`` from any
    folder, ``lakehouse serve``); the profile's relative ones, which dbt's session resolves in
    the checkout, match them too. An archive dumped from the profile's session would hold the
    relative paths, and serve only JVMs started in the checkout.
    """
    from dbt.cli.main import dbtRunner
    from lakehouse.session import get_spark

    get_spark("lakehouse-cds")  # dbt's session method then gets this one
    args = ["build", "--exclude", "resource_type:test", "--profiles-dir", str(PROJECT_DIR / "profiles")]
    result = dbtRunner().invoke([*args, "--project-dir", str(PROJECT_DIR)])
    return 0 if result.success else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m lakehouse.cds``: write the archive (``make setup`` does)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, default=ARCHIVE, help=f"where to write it (default {ARCHIVE})")
    parser.add_argument("--training-build", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.training_build:
        return _training_build()
    build_archive(args.archive.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
