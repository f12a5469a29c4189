"""A local PostgreSQL *source* database for Debezium (``lakehouse source up postgres``).

Separate from the metastore server of :mod:`lakehouse.local.postgres` (own folder, own port), whose
helpers it reuses (initdb as the ``postgres`` OS user, ``pg_ctl`` start/stop, ``psql``): a source
needs logical decoding (``wal_level=logical``, replication slots and WAL senders), which a
metastore does not, and a test must be able to throw it away without touching the metastore.

Layout of its folder (default ``.cache/sources/postgres`` or ``LAKEHOUSE_SOURCE_POSTGRES_DIR``):
``data/`` (the cluster), ``password`` (role ``lakehouse``, a superuser, which Debezium uses too),
``logs/postgres.log``, and ``debezium/`` (the connector's offsets, see :mod:`.debezium`).
"""

from __future__ import annotations

import os
from pathlib import Path

from lakehouse.local import SOURCES_DIR, HarnessError, postgres

DEFAULT_PORT = 5434
DEFAULT_DATABASE = "shop"
#: Appended once to ``postgresql.conf``: what Debezium's pgoutput connector needs, and UTC so that
#: ``psql`` prints timestamps the way the lakehouse stores them.
_SETTINGS = """
# lakehouse.local.pg_source: a CDC source for Debezium
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
timezone = 'UTC'
"""


def source_dir() -> Path:
    """``LAKEHOUSE_SOURCE_POSTGRES_DIR`` or ``.cache/sources/postgres``."""
    raw = os.environ.get("LAKEHOUSE_SOURCE_POSTGRES_DIR")
    return Path(raw).expanduser().resolve() if raw else SOURCES_DIR / "postgres"


def default_port() -> int:
    """``LAKEHOUSE_SOURCE_POSTGRES_PORT`` or 5434 (5433 is the metastore's)."""
    return int(os.environ.get("LAKEHOUSE_SOURCE_POSTGRES_PORT", DEFAULT_PORT))


def start(
    port: int | None = None, directory: Path | None = None, database: str = DEFAULT_DATABASE
) -> postgres.PostgresInfo:
    """Start the source server (initdb and logical-decoding settings at the first start) and
    create ``database``; an already running server of ``directory`` is returned as is."""
    directory = (directory or source_dir()).resolve()
    port = port or default_port()
    try:
        if postgres.status(directory) is None:
            user = postgres._server_user()
            directory.mkdir(parents=True, exist_ok=True)
            if user is not None:
                postgres._check_reachable(directory, user)
            postgres._init_cluster(directory, user)
            conf = directory / "data" / "postgresql.conf"
            if "lakehouse.local.pg_source" not in conf.read_text():
                with conf.open("a") as out:
                    out.write(_SETTINGS)
        info = postgres.start(port, directory)
        postgres.ensure_database(info, database)
    except postgres.PostgresError as exc:
        raise HarnessError(str(exc)) from exc
    return info


def status(directory: Path | None = None) -> postgres.PostgresInfo | None:
    """The running source server of ``directory``, or None."""
    return postgres.status((directory or source_dir()).resolve())


def stop(directory: Path | None = None) -> postgres.PostgresInfo | None:
    """Stop the source server of ``directory`` (None: it was not running)."""
    try:
        return postgres.stop((directory or source_dir()).resolve())
    except postgres.PostgresError as exc:
        raise HarnessError(str(exc)) from exc


def sql(info: postgres.PostgresInfo, text: str, database: str = DEFAULT_DATABASE) -> str:
    """Run ``text`` with psql on ``database`` (one implicit transaction); unaligned output."""
    try:
        return postgres.psql(info, text, database)
    except postgres.PostgresError as exc:
        raise HarnessError(str(exc)) from exc


def connector_properties(info: postgres.PostgresInfo, database: str = DEFAULT_DATABASE) -> dict[str, str]:
    """The Debezium PostgreSQL connector's connection options for this server."""
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1",
        "database.port": str(info.port),
        "database.user": postgres.ROLE,
        "database.password": postgres.password(Path(info.directory)),
        "database.dbname": database,
    }
