"""SQL access for analysts: Spark's Thrift JDBC/ODBC server and the spark-sql shell.

``lakehouse serve`` runs ``org.apache.spark.sql.hive.thriftserver.HiveThriftServer2`` (the
HiveServer2 protocol that beeline, DBeaver, dbt's ``thrift`` target and every Hive/Spark JDBC or
ODBC driver speak) in the foreground, and ``lakehouse sql`` without a query opens the
``spark-sql`` shell. Both are launched with ``spark-submit`` of the pyspark wheel and exactly the
settings of :func:`lakehouse.session.spark_conf`, so they see the same tables as the loader and
``dbt build``: same Delta catalog, same warehouse, same Derby metastore under ``LAKEHOUSE_DIR``.

``spark-submit`` (not a ``java`` command line of our own) because it is what turns
``spark.driver.memory``, ``spark.driver.extraClassPath`` and ``spark.driver.extraJavaOptions``
into JVM options; the pyspark wheel ships it, but not the ``sbin/start-thriftserver.sh`` daemon
scripts, whose pid-file and log handling this module replaces.

Derby, the metastore, lets one process at a time open it. So a server (or shell) and a
``lakehouse build`` / ``lakehouse sql`` on the same ``LAKEHOUSE_DIR`` exclude each other; this
module checks that before starting a JVM and says so, rather than letting Hive print thousands
of lines of stack traces. ``dbt --target thrift`` goes through the server and does not conflict.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from lakehouse.paths import lakehouse_dir
from lakehouse.ports import port_in_use
from lakehouse.session import derby_busy, repair_aborted_metastore, spark_conf

THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 10000
#: How long the JVM may take to open its port (Spark + Delta + metastore start on a busy box).
START_TIMEOUT = float(os.environ.get("LAKEHOUSE_SERVE_TIMEOUT", "300"))
#: How long the JVM gets to stop after SIGTERM (sessions, SparkContext, Derby) before SIGKILL.
STOP_GRACE = 30.0
#: HiveServer2 reads these before its own settings: unset them so --host/--port always win.
_HIVE_ENV_OVERRIDES = ("HIVE_SERVER2_THRIFT_PORT", "HIVE_SERVER2_THRIFT_BIND_HOST")
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
METASTORE_BUSY = (
    "the Derby metastore of {root} is open in another process (Derby allows one process "
    "at a time): stop other lakehouse processes (lakehouse sql, build) first"
)


class ServeError(RuntimeError):
    """The server or shell cannot start (or died); the message says why and what to do."""


def _progress(message: str) -> None:
    print(f"[lakehouse] {message}", file=sys.stderr, flush=True)


def spark_bin(name: str) -> Path:
    """A launcher script of the pyspark wheel (``spark-submit``, ``spark-sql``, ``beeline``).

    The wheel's copies find their Spark home themselves, so no SPARK_HOME is needed and the
    jars are exactly those of the pyspark the rest of the project runs on.
    """
    import pyspark

    path = Path(pyspark.__file__).resolve().parent / "bin" / name
    if not os.access(path, os.X_OK):
        raise ServeError(f"{path} is missing or not executable: reinstall pyspark (make setup)")
    return path


def conf_args(root: Path) -> list[str]:
    """``--conf key=value`` for every setting of the lakehouse session rooted at ``root``."""
    args: list[str] = []
    for key, value in spark_conf(root).items():
        args += ["--conf", f"{key}={value}"]
    return args


def thrift_server_command(root: Path, host: str, port: int) -> list[str]:
    """The ``spark-submit`` command line of the Thrift server for ``root`` on ``host:port``."""
    return [
        str(spark_bin("spark-submit")), "--class", THRIFT_SERVER_CLASS,
        "--name", f"lakehouse-serve {root}", *conf_args(root),
        "--hiveconf", f"hive.server2.thrift.bind.host={host}",
        "--hiveconf", f"hive.server2.thrift.port={port}",
        "--hiveconf", "hive.server2.transport.mode=binary",
    ]  # fmt: skip


def spark_sql_command(root: Path) -> list[str]:
    """The interactive ``spark-sql`` shell on the lakehouse rooted at ``root``."""
    return [str(spark_bin("spark-sql")), "--name", f"lakehouse-sql {root}", *conf_args(root)]


def jdbc_url(host: str, port: int) -> str:
    """The HiveServer2 JDBC URL clients use (IPv6 literals in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"jdbc:hive2://{shown}:{port}/default"


def beeline_command(host: str, port: int) -> str:
    """A ready-to-paste beeline line, with the beeline of the pyspark wheel."""
    return shlex.join([str(spark_bin("beeline")), "-u", jdbc_url(host, port)])


def dbt_command(host: str, port: int) -> str:
    """``dbt build`` with the ``thrift`` target of ``profiles/profiles.yml`` against this server.

    Through ``lakehouse build`` (which adds the profile and project directories), so the line
    works from any directory; the target reads host and port from the environment.
    """
    env = f"LAKEHOUSE_THRIFT_HOST={host} " if host != DEFAULT_HOST else ""
    env += f"LAKEHOUSE_THRIFT_PORT={port} " if port != DEFAULT_PORT else ""
    return f"{env}{shlex.quote(str(Path(sys.executable).with_name('lakehouse')))} build --target thrift"


def port_answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _record_path(root: Path, port: int) -> Path:
    """Where a running server of ``root`` says where it listens (beside its log)."""
    return root / "logs" / f"thriftserver-{port}.json"


def _write_record(root: Path, host: str, port: int) -> Path:
    """Say that this process serves ``root`` on ``host:port``, for :func:`running_server`."""
    path = _record_path(root, port)
    path.write_text(json.dumps({"pid": os.getpid(), "host": host, "port": port}) + "\n", encoding="utf-8")
    return path


def running_server(root: Path) -> tuple[str, int] | None:
    """Host and port of a ``lakehouse serve`` of ``root`` that is running and answers, else None.

    Read from the records servers keep while they serve (``logs/thriftserver-<port>.json``): a
    record whose process is gone (killed, machine restarted) or whose port does not answer is
    passed over. ``lakehouse build`` uses it to build through the server that holds the Derby
    metastore rather than refuse to start.
    """
    for path in sorted((root / "logs").glob("thriftserver-*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            pid, host, port = int(record["pid"]), str(record["host"]), int(record["port"])
            os.kill(pid, 0)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if host in ("0.0.0.0", "::"):  # listening everywhere: reached on loopback  # noqa: S104
            host = DEFAULT_HOST
        if port_answers(host, port):
            return host, port
    return None


def check_can_start(root: Path, host: str | None = None, port: int | None = None) -> None:
    """Raise :class:`ServeError` if the port is taken or the metastore is held elsewhere."""
    if port is not None and not 0 < port < 65536:
        raise ServeError(f"--port {port} is not a TCP port (1-65535)")
    if port is not None and host is not None and port_in_use(port, host):
        raise ServeError(
            f"port {port} on {host} is taken (another lakehouse serve or HiveServer2?): "
            "stop it or choose another with --port"
        )
    # Only Derby is single-process; a metastore on a database server (PostgreSQL) is shared.
    if derby_busy(root):
        raise ServeError(METASTORE_BUSY.format(root=root))


def _child_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _HIVE_ENV_OVERRIDES}
    env["LAKEHOUSE_DIR"] = str(root)
    return env


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if ``lakehouse serve`` dies (even by SIGKILL).

    Otherwise a killed ``lakehouse serve`` would leave an orphan JVM holding the port and the
    Derby metastore. Linux only; elsewhere the JVM outlives a SIGKILLed parent.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG


def start_server(root: Path, host: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """Start the Thrift server JVM, its output into ``log``, in its own session.

    Its own session, so a Ctrl-C in the terminal reaches only ``lakehouse serve``, which then
    stops the JVM with SIGTERM: one shutdown path whatever the signal.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        return subprocess.Popen(
            thrift_server_command(root, host, port), stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, cwd=root, env=_child_env(root), start_new_session=True,
            preexec_fn=_die_with_parent,
        )  # fmt: skip


def explain_failure(log: Path, root: Path, host: str, port: int) -> str:
    """Why the server died, from its log: the two usual causes in plain words, else the tail."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        text = ""
    if "XSDB6" in text or "Another instance of Derby" in text:
        return METASTORE_BUSY.format(root=root)
    if "BindException" in text or "Address already in use" in text or "Could not create ServerSocket" in text:
        return f"port {port} on {host} is taken: stop what uses it or choose another with --port"
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("at ", "..."))]
    return "the Thrift server exited while starting:\n" + "\n".join(lines[-20:]) + f"\n(full log: {log})"


def wait_until_ready(
    proc: subprocess.Popen[bytes], host: str, port: int, timeout: float, stop: threading.Event
) -> bool:
    """Block until the server accepts connections (True), or a stop was requested (False).

    The port is the readiness signal: HiveThriftServer2 opens it only after the Spark session
    and the metastore are up. Raises :class:`ServeError` if the JVM exits or the time runs out.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if stop.is_set():
            return False
        if proc.poll() is not None:
            raise ServeError(f"exit code {proc.returncode}")
        if port_answers(host, port):
            return True
        stop.wait(0.5)
    raise ServeError(f"the Thrift server did not open {host}:{port} within {timeout:.0f}s")


def stop_server(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> int:
    """SIGTERM the JVM (Spark's shutdown hooks close sessions and Derby), SIGKILL after ``grace``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            _progress(f"the Thrift server did not stop within {grace:.0f}s: killing it")
            proc.kill()
            proc.wait()
    return proc.returncode


def _print_ready(proc: subprocess.Popen[bytes], root: Path, host: str, port: int, log: Path) -> None:
    lines = [
        f"Spark Thrift server ready on {host}:{port} (pid {proc.pid}, LAKEHOUSE_DIR={root})",
        f"  JDBC URL: {jdbc_url(host, port)}   (DBeaver: Apache Spark or Hive driver, no user/password)",
        f"  beeline:  {beeline_command(host, port)}",
        f"  dbt:      {dbt_command(host, port)}",
        f"  log:      {log}",
        "Stop with Ctrl-C (or SIGTERM).",
    ]
    print("\n".join(lines), flush=True)


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, root: Path | None = None) -> int:
    """Run the Thrift server in the foreground until Ctrl-C/SIGTERM/SIGHUP; 0 on a clean stop.

    Signals only set a flag: the JVM is then stopped here, so it never outlives the command
    (see also :func:`_die_with_parent`) and a stop during start-up is as clean as after it.
    """
    root = root or lakehouse_dir()
    root.mkdir(parents=True, exist_ok=True)
    repair_aborted_metastore(root)
    log = root / "logs" / f"thriftserver-{port}.log"  # per port: a second start cannot clobber it
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOP_SIGNALS}
    proc: subprocess.Popen[bytes] | None = None
    record: Path | None = None
    try:
        check_can_start(root, host, port)
        if host not in ("127.0.0.1", "localhost", "::1"):
            _progress(f"warning: {host} is not loopback and the server has no authentication: "
                      "anyone who reaches it can read and drop every table")
        _progress(f"starting the Spark Thrift server on {host}:{port} (LAKEHOUSE_DIR={root}, log: {log})")
        proc = start_server(root, host, port, log)
        try:
            ready = wait_until_ready(proc, host, port, START_TIMEOUT, stop)
        except ServeError as exc:
            if proc.poll() is None:
                raise
            raise ServeError(explain_failure(log, root, host, port)) from exc
        if ready:
            record = _write_record(root, host, port)
            _print_ready(proc, root, host, port, log)
            while not stop.is_set() and proc.poll() is None:
                stop.wait(0.5)
            record.unlink(missing_ok=True)  # no new build is sent to a server that stops
        if proc.poll() is not None:
            raise ServeError(f"the Thrift server exited by itself (code {proc.returncode}); see {log}")
        _progress("stopping the Spark Thrift server")
        stop_server(proc)
        _progress("stopped")
        return 0
    except ServeError as exc:
        _progress(str(exc))
        return 1
    finally:
        if record is not None:
            record.unlink(missing_ok=True)
        if proc is not None and proc.poll() is None:
            stop_server(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def spark_sql_shell(root: Path | None = None) -> int:
    """Replace this process with the interactive ``spark-sql`` shell on the lakehouse.

    ``exec`` rather than a child: the shell owns the terminal, Ctrl-C cancels its statement as
    spark-sql intends, and nothing is left behind when it exits. Statements piped on stdin
    run too (``echo 'select 1;' | lakehouse sql``).
    """
    root = root or lakehouse_dir()
    root.mkdir(parents=True, exist_ok=True)
    repair_aborted_metastore(root)
    try:
        check_can_start(root)
        cmd = spark_sql_command(root)
    except ServeError as exc:
        _progress(str(exc))
        return 1
    _progress(f"spark-sql on LAKEHOUSE_DIR={root}: end statements with ; and leave with quit;")
    sys.stdout.flush()
    os.chdir(root)  # where the shell's own files (derby.log and friends) belong
    os.execve(cmd[0], cmd, _child_env(root))
    return 0  # not reached

