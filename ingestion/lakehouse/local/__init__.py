"""Local helpers around the product: servers for development, tests and trying it out.

These are conveniences around the lakehouse, not part of it; production points it at its own
Kafka, metastore database and cluster. They run on 127.0.0.1, from what the machine already has
or Maven Central: a single-node Kafka broker (:mod:`.broker`), a PostgreSQL server for a shared
Hive metastore (:mod:`.postgres`), a Spark standalone cluster (:mod:`.cluster`), and the
real-database harness (docs/real-databases.md), which starts PostgreSQL and MariaDB source
databases from Debian's packages (:mod:`.pg_source`, :mod:`.mariadb`) and runs Debezium's
embedded engine into that broker (:mod:`.debezium`), so that the lakehouse can be tried and
tested on what real databases and a real CDC tool write. Their command line (``lakehouse
kafka``, ``postgres``, ``cluster``, ``source``, ``debezium``) is in :mod:`lakehouse.cli`, a
module per command. What follows is shared by the harness's modules.
"""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path

from lakehouse.paths import PROJECT_DIR

#: Where the local source databases keep their data (git-ignored, like every ``.cache`` folder).
SOURCES_DIR = PROJECT_DIR / ".cache" / "sources"


class HarnessError(RuntimeError):
    """A source database or Debezium could not be installed, started or stopped; the message says why."""


def progress(message: str) -> None:
    """One progress line on stderr (stdout is kept for what a script would capture)."""
    print(f"[lakehouse] {message}", file=sys.stderr, flush=True)


def os_user(name: str, env_var: str) -> pwd.struct_passwd | None:
    """The OS user a database server runs as: None (the current user) unless this runs as root.

    Both servers refuse to run as root; Debian's packages create ``postgres`` and ``mysql``.
    """
    if os.geteuid() != 0:
        return None
    chosen = os.environ.get(env_var, name)
    try:
        return pwd.getpwnam(chosen)
    except KeyError:
        raise HarnessError(
            f"the server cannot run as root and there is no OS user {chosen!r}: install the Debian "
            f"package that creates it, or set {env_var} to an existing non-root user"
        ) from None


def give_to(path: Path, user: pwd.struct_passwd | None) -> None:
    """Make ``path`` the server user's (a folder it writes in)."""
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
