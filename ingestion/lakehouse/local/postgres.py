"""A local PostgreSQL server for a shared Hive metastore (``lakehouse postgres up|down|status|env``).

Why PostgreSQL: the embedded default keeps Spark's Hive metastore in Derby under
``LAKEHOUSE_DIR``, and Derby lets one process at a time open it, so the loader, dbt, the Thrift
server and an analyst's ``lakehouse sql`` exclude each other. With the metastore in a real
database (``LAKEHOUSE_METASTORE_URL=jdbc:postgresql://...``, see :mod:`lakehouse.session`) all of
them see the same tables at the same time, on one machine or on a cluster.

This module runs Debian's ``postgresql`` package (not a download, not a container) for
development and the tests; production points ``LAKEHOUSE_METASTORE_URL`` at its own server. One
server lives in one directory (default ``.cache/postgres`` in the checkout, or
``LAKEHOUSE_POSTGRES_DIR``)::

    data/              the database cluster (initdb), owned by the server's OS user, mode 0700
    password           the password of the role ``lakehouse`` (mode 0600), made at the first start
    logs/postgres.log  the server's log

It listens on 127.0.0.1 only, TCP only (no Unix socket, so no shared /var/run directory is
needed), with password (SCRAM) authentication. PostgreSQL refuses to run as root: when this
runs as root (CI, containers), the server runs as the OS user ``postgres`` that the Debian
package creates (``LAKEHOUSE_POSTGRES_OS_USER`` to choose another).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from lakehouse.paths import PROJECT_DIR
from lakehouse.ports import port_in_use

#: Not 5432, so a system PostgreSQL on its default port is left alone.
DEFAULT_PORT = 5433
#: The database role that owns the metastore databases.
ROLE = "lakehouse"
DEFAULT_DATABASE = "metastore"
#: PostgreSQL's identifier rule, kept strict so a name never needs quoting in SQL or JDBC URLs.
_DATABASE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresError(RuntimeError):
    """The server could not be found, initialised, started or stopped; the message says why."""


@dataclass(frozen=True)
class PostgresInfo:
    """A running server as recorded in its ``postmaster.pid``."""

    pid: int
    port: int
    directory: str

    def jdbc_url(self, database: str = DEFAULT_DATABASE) -> str:
        """The JDBC URL of ``database`` on this server (``LAKEHOUSE_METASTORE_URL``)."""
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"


def postgres_dir() -> Path:
    """The default server directory: ``LAKEHOUSE_POSTGRES_DIR`` or ``.cache/postgres`` (git-ignored)."""
    raw = os.environ.get("LAKEHOUSE_POSTGRES_DIR")
    return Path(raw).expanduser().resolve() if raw else PROJECT_DIR / ".cache" / "postgres"


def default_port() -> int:
    """The default port: ``LAKEHOUSE_POSTGRES_PORT`` or 5433."""
    return int(os.environ.get("LAKEHOUSE_POSTGRES_PORT", DEFAULT_PORT))


def bin_dir() -> Path:
    """The folder of ``initdb``, ``pg_ctl`` and ``psql`` of the installed PostgreSQL server.

    Debian keeps the server programs in ``/usr/lib/postgresql/<version>/bin``, off the PATH, so
    that folder is searched too (the newest version wins); ``LAKEHOUSE_POSTGRES_BIN`` overrides.
    """
    candidates: list[Path] = []
    if os.environ.get("LAKEHOUSE_POSTGRES_BIN"):
        candidates.append(Path(os.environ["LAKEHOUSE_POSTGRES_BIN"]))
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", path.parent.name)) or (0,)

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres", "psql")):
            return folder
    raise PostgresError(
        "PostgreSQL server programs (initdb, pg_ctl, postgres, psql) not found: install Debian's "
        "postgresql package (`make postgres-bin` runs apt-get install postgresql) or set "
        "LAKEHOUSE_POSTGRES_BIN to their folder"
    )


def _server_user() -> pwd.struct_passwd | None:
    """The OS user the server runs as: None for the current user, ``postgres`` when root."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("LAKEHOUSE_POSTGRES_OS_USER", "postgres")
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise PostgresError(
            f"PostgreSQL refuses to run as root and there is no OS user {name!r} to run it as: "
            "install Debian's postgresql package (it creates `postgres`) or set "
            "LAKEHOUSE_POSTGRES_OS_USER to an existing non-root user"
        ) from None


def _check_reachable(directory: Path, user: pwd.struct_passwd) -> None:
    """Fail early, naming the folder, when ``user`` cannot traverse to ``directory``.

    ``initdb`` run as ``postgres`` would otherwise fail with a bare "permission denied" on a
    folder such as pytest's ``/tmp/pytest-of-root`` (mode 0700).
    """
    for folder in [*reversed(directory.parents), directory]:
        if not folder.exists():
            break
        st = folder.stat()
        if st.st_uid == user.pw_uid:
            continue
        allowed = st.st_mode & stat.S_IXGRP if st.st_gid == user.pw_gid else st.st_mode & stat.S_IXOTH
        if not allowed:
            raise PostgresError(
                f"the PostgreSQL server runs as OS user {user.pw_name!r}, which cannot enter "
                f"{folder} (mode {stat.filemode(st.st_mode)}): choose a directory under a "
                "world-traversable folder (e.g. /tmp or the checkout) with --dir"
            )


def _run_as_server(cmd: list[str], directory: Path, user: pwd.struct_passwd | None) -> subprocess.CompletedProcess:
    """Run a server program as the server's OS user; output captured for error messages."""
    kwargs: dict = {}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
    if user is not None:
        kwargs = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        env["HOME"] = user.pw_dir
    return subprocess.run(
        cmd, cwd=directory, env=env, capture_output=True, text=True, check=False,
        stdin=subprocess.DEVNULL, **kwargs,
    )  # fmt: skip


def _give_to(path: Path, user: pwd.struct_passwd | None) -> None:
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)


def _init_cluster(directory: Path, user: pwd.struct_passwd | None) -> str:
    """``initdb`` once: role ``lakehouse`` with a password, SCRAM authentication, UTF-8.

    The password is ``LAKEHOUSE_METASTORE_PASSWORD`` if set at this first start, else random;
    it is kept in ``password`` (0600) so later starts and ``lakehouse postgres env`` know it.
    """
    password_file = directory / "password"
    data = directory / "data"
    if (data / "PG_VERSION").is_file():
        try:
            return password_file.read_text().strip()
        except OSError as exc:
            raise PostgresError(f"{data} exists but its password file {password_file} is unreadable") from exc
    if data.exists():
        shutil.rmtree(data)  # an initdb killed half-way: it never held a database
    password = os.environ.get("LAKEHOUSE_METASTORE_PASSWORD") or secrets.token_urlsafe(18)
    data.mkdir(mode=0o700)
    _give_to(data, user)
    pwfile = directory / ".initdb-password"
    pwfile.write_text(password + "\n")
    pwfile.chmod(0o600)
    _give_to(pwfile, user)
    try:
        done = _run_as_server([
            str(bin_dir() / "initdb"), "-D", str(data), "-U", ROLE, f"--pwfile={pwfile}",
            "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C",
        ], directory, user)  # fmt: skip
    finally:
        pwfile.unlink(missing_ok=True)
    if done.returncode != 0:
        raise PostgresError(f"initdb in {data} failed:\n{(done.stdout + done.stderr).strip()}")
    password_file.write_text(password + "\n")
    password_file.chmod(0o600)
    return password


def _pid_alive_as_postgres(pid: int) -> bool:
    try:
        exe = Path(f"/proc/{pid}/exe").resolve().name
    except OSError:
        return False
    return exe in ("postgres", "postmaster")


def status(directory: Path | None = None) -> PostgresInfo | None:
    """The server running from ``directory``, or None.

    ``postmaster.pid`` (first line the pid, fourth the port) is PostgreSQL's own pid file; it
    stays behind after a crash, so the pid is checked to be a live ``postgres`` process.
    """
    directory = (directory or postgres_dir()).resolve()
    try:
        lines = (directory / "data" / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
    except (OSError, ValueError, IndexError):
        return None
    return PostgresInfo(pid, port, str(directory)) if _pid_alive_as_postgres(pid) else None


def _log_tail(directory: Path, lines: int = 20) -> str:
    path = directory / "logs" / "postgres.log"
    try:
        return f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def start(port: int | None = None, directory: Path | None = None, timeout: float = 60.0) -> PostgresInfo:
    """Start the server of ``directory`` on 127.0.0.1:``port`` (initdb at the first start).

    Already running from the same directory on the same port: returned as is. ``pg_ctl -w``
    returns once the server accepts connections; the server is detached from this process.
    """
    directory = (directory or postgres_dir()).resolve()
    port = port or default_port()
    running = status(directory)
    if running:
        if running.port != port:
            raise PostgresError(
                f"the PostgreSQL server of {directory} already runs on port {running.port} "
                f"(pid {running.pid}); stop it first (lakehouse postgres down)"
            )
        return running
    if port_in_use(port):
        raise PostgresError(f"port {port} on 127.0.0.1 is in use: choose another with --port")
    user = _server_user()
    directory.mkdir(parents=True, exist_ok=True)
    if user is not None:
        _check_reachable(directory, user)
    logs = directory / "logs"
    logs.mkdir(exist_ok=True)
    _give_to(logs, user)
    _init_cluster(directory, user)
    # -k '': no Unix socket (TCP on loopback only); pg_ctl passes -o through /bin/sh.
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k '' -c shared_buffers=32MB"
    done = _run_as_server([
        str(bin_dir() / "pg_ctl"), "-D", str(directory / "data"), "-l", str(logs / "postgres.log"),
        "-o", options, "-w", "-t", str(int(timeout)), "start",
    ], directory, user)  # fmt: skip
    info = status(directory)
    if done.returncode != 0 or info is None:
        raise PostgresError(
            f"PostgreSQL did not start on 127.0.0.1:{port}:\n{(done.stdout + done.stderr).strip()}\n"
            + _log_tail(directory)
        )
    return info


def password(directory: Path | None = None) -> str:
    """The password of the role ``lakehouse`` of the server in ``directory``."""
    directory = (directory or postgres_dir()).resolve()
    try:
        return (directory / "password").read_text().strip()
    except OSError as exc:
        raise PostgresError(f"no PostgreSQL server was initialised in {directory} (lakehouse postgres up)") from exc


def psql(info: PostgresInfo, sql: str, database: str = "postgres") -> str:
    """Run ``sql`` with psql as ``lakehouse`` on ``database``; its output, or PostgresError."""
    env = dict(os.environ, PGPASSWORD=password(Path(info.directory)), PGCONNECT_TIMEOUT="10")
    cmd = [
        str(bin_dir() / "psql"), "-h", "127.0.0.1", "-p", str(info.port), "-U", ROLE, "-d", database,
        "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql,
    ]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PostgresError(f"psql on 127.0.0.1:{info.port}/{database} failed: {done.stderr.strip()}")
    return done.stdout


def ensure_database(info: PostgresInfo, database: str = DEFAULT_DATABASE) -> bool:
    """Create ``database`` (owned by ``lakehouse``) unless it exists; True when it was created.

    An empty database is all the metastore needs: Spark's Hive client creates its schema at its
    first connection (``datanucleus.schema.autoCreateAll``, see :mod:`lakehouse.session`).
    """
    if not _DATABASE_NAME.match(database):
        raise PostgresError(
            f"database name {database!r}: use lower-case letters, digits and _ (at most 63, not starting with a digit)"
        )
    if psql(info, f"select 1 from pg_database where datname = '{database}'").strip() == "1":
        return False
    psql(info, f"create database {database} owner {ROLE} encoding 'UTF8'")
    return True


def drop_database(info: PostgresInfo, database: str) -> None:
    """Drop ``database`` if it exists (a metastore that is no longer needed)."""
    if not _DATABASE_NAME.match(database):
        raise PostgresError(f"database name {database!r} is not a plain identifier")
    psql(info, f"drop database if exists {database} with (force)")


def metastore_env(info: PostgresInfo, database: str = DEFAULT_DATABASE) -> dict[str, str]:
    """The environment that points :mod:`lakehouse.session` at ``database`` as the metastore."""
    return {
        "LAKEHOUSE_METASTORE_URL": info.jdbc_url(database),
        "LAKEHOUSE_METASTORE_USER": ROLE,
        "LAKEHOUSE_METASTORE_PASSWORD": password(Path(info.directory)),
    }


def stop(directory: Path | None = None, timeout: float = 60.0) -> PostgresInfo | None:
    """Stop the server of ``directory`` (fast shutdown: sessions are disconnected); None if none ran."""
    directory = (directory or postgres_dir()).resolve()
    info = status(directory)
    if info is None:
        return None
    done = _run_as_server(
        [str(bin_dir() / "pg_ctl"), "-D", str(directory / "data"), "-m", "fast", "-w", "-t", str(int(timeout)), "stop"],
        directory, _server_user(),
    )  # fmt: skip
    if done.returncode != 0 and status(directory) is not None:
        # The postmaster of this directory only: SIGQUIT is PostgreSQL's immediate shutdown (its
        # backends exit with it), SIGKILL the last resort.
        for sig, wait in ((signal.SIGQUIT, 20.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(info.pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _pid_alive_as_postgres(info.pid):
                time.sleep(0.2)
            if not _pid_alive_as_postgres(info.pid):
                break
    return info


# --------------------------------------------------------------------------- command line
