"""A local MariaDB source database for Debezium (``lakehouse source up mariadb``).

Debian's ``mariadb-server`` package (``make sources-bin`` installs it), never the system service:
``mariadb-install-db`` makes a data folder of the harness's own, and ``mariadbd`` runs on it as the
OS user ``mysql``, on 127.0.0.1 only, with the binary log Debezium reads (ROW format, full row
images, a server id). The server runs in UTC so that TIMESTAMP columns read back as the UTC values
Debezium sends.

Layout of its folder (default ``.cache/sources/mariadb`` or ``LAKEHOUSE_SOURCE_MARIADB_DIR``)::

    data/               the databases and the binary log (owned by mysql)
    run/mariadb.sock    the Unix socket (``root`` logs in through it, as the OS user root)
    run/mariadb.pid     the server's pid
    logs/mariadb.err    the server's error log
    password            the password of the user ``debezium`` (replication grants), mode 0600
    debezium/           the connector's offsets and schema history (see :mod:`.debezium`)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from lakehouse.local import SOURCES_DIR, HarnessError, give_to, os_user
from lakehouse.ports import port_in_use

DEFAULT_PORT = 3307
DEFAULT_DATABASE = "shop"
#: The user Debezium connects as; the grants are those Debezium's MariaDB connector documents.
DEBEZIUM_USER = "debezium"
_GRANTS = "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES"


@dataclass(frozen=True)
class MariaDbInfo:
    """A running server: its pid, TCP port and folder."""

    pid: int
    port: int
    directory: str

    @property
    def socket(self) -> Path:
        """The Unix socket through which ``root`` (the OS user root) logs in."""
        return Path(self.directory) / "run" / "mariadb.sock"


def source_dir() -> Path:
    """``LAKEHOUSE_SOURCE_MARIADB_DIR`` or ``.cache/sources/mariadb``."""
    raw = os.environ.get("LAKEHOUSE_SOURCE_MARIADB_DIR")
    return Path(raw).expanduser().resolve() if raw else SOURCES_DIR / "mariadb"


def default_port() -> int:
    """``LAKEHOUSE_SOURCE_MARIADB_PORT`` or 3307 (3306 is left to a system server)."""
    return int(os.environ.get("LAKEHOUSE_SOURCE_MARIADB_PORT", DEFAULT_PORT))


def programs() -> dict[str, str]:
    """The paths of ``mariadbd``, ``mariadb-install-db`` and ``mariadb``, or HarnessError."""
    found = {}
    for name in ("mariadbd", "mariadb-install-db", "mariadb"):
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
        if path is None:
            raise HarnessError(
                f"MariaDB program {name} not found: install Debian's mariadb-server package "
                "(`make sources-bin` runs apt-get install mariadb-server)"
            )
        found[name] = path
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/exe").resolve().name in ("mariadbd", "mysqld")
    except OSError:
        return False


def status(directory: Path | None = None) -> MariaDbInfo | None:
    """The server running from ``directory`` (its ``server.json``), or None."""
    directory = (directory or source_dir()).resolve()
    try:
        info = MariaDbInfo(**json.loads((directory / "server.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return info if _alive(info.pid) else None


def _install(directory: Path, user_name: str | None) -> None:
    """``mariadb-install-db`` once into ``data/`` (system tables; root logs in by unix_socket)."""
    data = directory / "data"
    if (data / "mysql").is_dir():
        return
    if data.exists():
        shutil.rmtree(data)  # an install killed half-way: it never held a database
    cmd = [
        programs()["mariadb-install-db"], "--no-defaults", f"--datadir={data}",
        "--auth-root-authentication-method=socket", "--skip-test-db",
    ]  # fmt: skip
    if user_name:
        cmd.append(f"--user={user_name}")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise HarnessError(f"mariadb-install-db into {data} failed:\n{(done.stdout + done.stderr).strip()[-3000:]}")


def _log_tail(directory: Path, lines: int = 20) -> str:
    path = directory / "logs" / "mariadb.err"
    try:
        return f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def start(
    port: int | None = None, directory: Path | None = None, database: str = DEFAULT_DATABASE,
    timeout: float = 60.0,
) -> MariaDbInfo:  # fmt: skip
    """Start the server of ``directory`` on 127.0.0.1:``port`` (installed at the first start),
    create ``database`` and the ``debezium`` user; a running server is returned as is."""
    directory = (directory or source_dir()).resolve()
    port = port or default_port()
    running = status(directory)
    if running is not None:
        if running.port != port:
            raise HarnessError(
                f"the MariaDB server of {directory} already runs on port {running.port} "
                f"(pid {running.pid}); stop it first (lakehouse source down mariadb)"
            )
        _prepare(running, database)
        return running
    if port_in_use(port):
        raise HarnessError(f"port {port} on 127.0.0.1 is in use: choose another with --port")
    user = os_user("mysql", "LAKEHOUSE_MARIADB_OS_USER")
    for sub in ("", "run", "logs"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    for sub in ("run", "logs"):
        give_to(directory / sub, user)
    _install(directory, user.pw_name if user else None)
    cmd = [
        programs()["mariadbd"], "--no-defaults", f"--datadir={directory / 'data'}",
        f"--socket={directory / 'run' / 'mariadb.sock'}", f"--pid-file={directory / 'run' / 'mariadb.pid'}",
        f"--log-error={directory / 'logs' / 'mariadb.err'}", "--bind-address=127.0.0.1", f"--port={port}",
        "--log-bin=binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--server-id=1",
        "--default-time-zone=+00:00", "--character-set-server=utf8mb4", "--skip-name-resolve",
        "--innodb-buffer-pool-size=64M", "--max-allowed-packet=64M",
    ]  # fmt: skip
    if user is not None:
        cmd.append(f"--user={user.pw_name}")
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    info = MariaDbInfo(proc.pid, port, str(directory))
    (directory / "server.json").write_text(json.dumps(info.__dict__) + "\n")
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise HarnessError(f"mariadbd exited with code {proc.returncode} while starting:\n{_log_tail(directory)}")
        if info.socket.exists() and _client(info, "select 1", check=False).returncode == 0:
            break
        if time.monotonic() > deadline:
            stop(directory)
            raise HarnessError(
                f"MariaDB did not answer on {info.socket} within {timeout:.0f}s:\n{_log_tail(directory)}"
            )
        time.sleep(0.3)
    _prepare(info, database)
    return info


def password(directory: Path | None = None) -> str:
    """The password of the ``debezium`` user, made at the first start (file ``password``, 0600)."""
    path = (directory or source_dir()).resolve() / "password"
    if not path.is_file():
        path.write_text(secrets.token_urlsafe(18) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


def _prepare(info: MariaDbInfo, database: str) -> None:
    """Create ``database`` and the ``debezium`` user with replication grants (idempotent)."""
    pw = password(Path(info.directory))
    sql(info, (
        f"CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4; "
        f"CREATE USER IF NOT EXISTS '{DEBEZIUM_USER}'@'127.0.0.1' IDENTIFIED BY '{pw}'; "
        f"GRANT {_GRANTS} ON *.* TO '{DEBEZIUM_USER}'@'127.0.0.1'"
    ), database=None)  # fmt: skip


def _client(
    info: MariaDbInfo, text: str, database: str | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    cmd = [
        programs()["mariadb"], "--no-defaults", f"--socket={info.socket}", "-u", "root",
        "--batch", "--raw", "--skip-column-names", "--default-character-set=utf8mb4", "-e", text,
    ]  # fmt: skip
    if database:
        cmd.insert(2, f"--database={database}")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise HarnessError(f"mariadb on {info.socket} ({database or 'no database'}) failed: {done.stderr.strip()}")
    return done


def sql(info: MariaDbInfo, text: str, database: str | None = DEFAULT_DATABASE) -> str:
    """Run ``text`` (statements separated by ;) as root; tab-separated raw output, no header."""
    return _client(info, text, database).stdout


def stop(directory: Path | None = None, grace: float = 60.0) -> MariaDbInfo | None:
    """Stop the server of ``directory``: SIGTERM (a clean shutdown), SIGKILL after ``grace`` s."""
    directory = (directory or source_dir()).resolve()
    info = status(directory)
    if info is None:
        return None
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _alive(info.pid):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.pid, os.WNOHANG)
            time.sleep(0.2)
        if not _alive(info.pid):
            break
    (directory / "server.json").unlink(missing_ok=True)
    return info


def connector_properties(info: MariaDbInfo, database: str = DEFAULT_DATABASE) -> dict[str, str]:
    """The Debezium MariaDB connector's connection options for this server and ``database``."""
    return {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": "127.0.0.1",
        "database.port": str(info.port),
        "database.user": DEBEZIUM_USER,
        "database.password": password(Path(info.directory)),
        "database.server.id": "5401",
        "database.include.list": database,
    }
