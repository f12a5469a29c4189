"""A Spark standalone cluster on this machine: one master and N workers (``lakehouse cluster``).

Why a real cluster: ``local[*]`` runs every task inside the driver, so it cannot show what
breaks once executors are other processes (jars missing on executors, paths only the driver
sees, a metastore only one process can open). A standalone master with workers, each worker
starting executor JVMs of its own, is the smallest real cluster; the tests and
``lakehouse cluster up`` run it from the pyspark wheel's ``bin/spark-class`` (the wheel has no
``sbin`` daemon scripts, whose pid files and logs this module replaces).

One cluster lives in one directory (default ``.cache/cluster`` in the checkout, or
``LAKEHOUSE_CLUSTER_DIR``)::

    cluster.json          pids and ports of the running master and workers (the pid file)
    logs/master.log       the master's output; logs/worker-<n>.log each worker's
    work/worker-<n>/      each worker's work directory: app-*/<executor id>/stdout, stderr

Everything binds to 127.0.0.1 (the master accepts applications from anyone who reaches it,
without authentication). Applications use it with ``LAKEHOUSE_SPARK_MASTER=spark://127.0.0.1:7077``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lakehouse.paths import PROJECT_DIR
from lakehouse.ports import port_in_use

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DEFAULT_PORT = 7077
DEFAULT_WEBUI_PORT = 8080
#: Heap of the master and worker daemons (Spark's default is 1g; they need far less).
DAEMON_MEMORY = "512m"


class ClusterError(RuntimeError):
    """The cluster could not be started, reached or stopped; the message says why."""


@dataclass(frozen=True)
class ClusterInfo:
    """A running cluster as recorded in its ``cluster.json``."""

    directory: str
    master_pid: int
    port: int
    webui_port: int
    worker_pids: list[int] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        """What applications use as master (``LAKEHOUSE_SPARK_MASTER``)."""
        return f"spark://127.0.0.1:{self.port}"

    @property
    def webui_url(self) -> str:
        """The master's web UI; ``<webui_url>/json`` is its state as JSON."""
        return f"http://127.0.0.1:{self.webui_port}"


def cluster_dir() -> Path:
    """The default cluster directory: ``LAKEHOUSE_CLUSTER_DIR`` or ``.cache/cluster`` (git-ignored)."""
    raw = os.environ.get("LAKEHOUSE_CLUSTER_DIR")
    return Path(raw).expanduser().resolve() if raw else PROJECT_DIR / ".cache" / "cluster"


def spark_class() -> Path:
    """``bin/spark-class`` of the pyspark wheel: the Spark the rest of the project runs on."""
    import pyspark

    path = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
    if not os.access(path, os.X_OK):
        raise ClusterError(f"{path} is missing or not executable: reinstall pyspark (make setup)")
    return path


def _cmdline(pid: int) -> list[str]:
    try:
        return [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
    except OSError:
        return []


def _alive_as(pid: int, main_class: str, directory: Path) -> bool:
    """True when ``pid`` is a live daemon ``main_class`` of ``directory`` (not a recycled pid).

    The daemons are started with ``-Dlakehouse.cluster.dir=<directory>`` so they can be told
    apart from other Spark daemons on the machine.
    """
    args = _cmdline(pid)
    return main_class in args and f"-Dlakehouse.cluster.dir={directory}" in args


def status(directory: Path | None = None) -> ClusterInfo | None:
    """The cluster running from ``directory`` (its master alive), or None."""
    directory = (directory or cluster_dir()).resolve()
    try:
        info = ClusterInfo(**json.loads((directory / "cluster.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return info if _alive_as(info.master_pid, MASTER_CLASS, directory) else None


def master_state(info: ClusterInfo, timeout: float = 5.0) -> dict[str, Any]:
    """The master's state as its web UI serves it at ``/json`` (workers, applications)."""
    with urllib.request.urlopen(f"{info.webui_url}/json", timeout=timeout) as response:
        return json.loads(response.read())


def alive_workers(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The workers of ``state`` that the master sees alive."""
    return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]


def _daemon_env(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["SPARK_DAEMON_MEMORY"] = DAEMON_MEMORY
    # Tags the JVMs as this cluster's (see _alive_as) and keeps the web UIs on loopback too:
    # Spark binds them to SPARK_LOCAL_IP, else to every interface.
    tag = f"-Dlakehouse.cluster.dir={directory}"
    env["SPARK_DAEMON_JAVA_OPTS"] = f"{env.get('SPARK_DAEMON_JAVA_OPTS', '')} {tag}".strip()
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.pop("SPARK_HOME", None)  # spark-class finds the wheel's own
    return env


def _spawn(cmd: list[str], log: Path, directory: Path) -> subprocess.Popen[bytes]:
    """Start a daemon detached (own session: its executors share its process group)."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=directory,
            env=_daemon_env(directory), start_new_session=True,
        )  # fmt: skip


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return f"(no log at {path})"
    return f"--- {path}\n" + "\n".join(text)


def start(
    port: int = DEFAULT_PORT,
    webui_port: int = DEFAULT_WEBUI_PORT,
    workers: int = 2,
    worker_cores: int = 1,
    worker_memory: str = "1g",
    directory: Path | None = None,
    timeout: float = 120.0,
) -> ClusterInfo:
    """Start a master on 127.0.0.1:``port`` and ``workers`` workers; wait until all are registered.

    Each worker offers ``worker_cores`` cores and ``worker_memory`` to executors. Already running
    from the same directory: returned as is (ports must match). Detached: the cluster outlives
    the ``lakehouse cluster up`` that started it, until ``lakehouse cluster down``.
    """
    directory = (directory or cluster_dir()).resolve()
    running = status(directory)
    if running:
        if (running.port, running.webui_port) != (port, webui_port):
            raise ClusterError(
                f"the cluster of {directory} already runs on port {running.port} (web UI "
                f"{running.webui_port}); stop it first (lakehouse cluster down)"
            )
        return running
    for p, what in ((port, "--port"), (webui_port, "--webui-port")):
        if port_in_use(p):
            raise ClusterError(f"port {p} on 127.0.0.1 is in use: choose another with {what}")
    if workers < 1:
        raise ClusterError("a cluster needs at least one worker (--workers)")
    logs = directory / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    launcher = str(spark_class())
    master = _spawn(
        [launcher, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui_port)],
        logs / "master.log", directory,
    )  # fmt: skip
    info = ClusterInfo(str(directory), master.pid, port, webui_port)
    (directory / "cluster.json").write_text(json.dumps(asdict(info)) + "\n")
    procs = [master]
    try:
        _wait(info, 0, timeout, procs)
        for n in range(1, workers + 1):
            work = directory / "work" / f"worker-{n}"
            work.mkdir(parents=True, exist_ok=True)
            procs.append(_spawn([
                launcher, WORKER_CLASS, info.master_url, "--host", "127.0.0.1", "--webui-port", "0",
                "--cores", str(worker_cores), "--memory", worker_memory, "--work-dir", str(work),
            ], logs / f"worker-{n}.log", directory))  # fmt: skip
        info = ClusterInfo(str(directory), master.pid, port, webui_port, [p.pid for p in procs[1:]])
        (directory / "cluster.json").write_text(json.dumps(asdict(info)) + "\n")
        _wait(info, workers, timeout, procs)
    except BaseException:
        _stop_pids(directory, [p.pid for p in reversed(procs)], grace=10)
        (directory / "cluster.json").unlink(missing_ok=True)
        raise
    return info


def _wait(info: ClusterInfo, workers: int, timeout: float, procs: list[subprocess.Popen[bytes]]) -> None:
    """Block until the master answers and sees ``workers`` workers alive, or raise with the logs."""
    deadline = time.monotonic() + timeout
    logs = Path(info.directory) / "logs"
    last = "no answer"
    while time.monotonic() < deadline:
        for n, proc in enumerate(procs):
            if proc.poll() is not None:
                name = "master" if n == 0 else f"worker-{n}"
                raise ClusterError(
                    f"the Spark {name} exited with code {proc.returncode} while starting:\n"
                    + _log_tail(logs / f"{name}.log")
                )
        try:
            state = master_state(info, timeout=2)
            alive = len(alive_workers(state))
            if state.get("status") == "ALIVE" and alive >= workers:
                return
            last = f"master {state.get('status')}, {alive} of {workers} worker(s) registered"
        except (OSError, ValueError) as exc:
            last = str(exc)
        time.sleep(0.5)
    raise ClusterError(
        f"the Spark cluster on {info.master_url} was not ready after {timeout:.0f}s ({last}):\n"
        + "\n".join(_log_tail(p) for p in sorted(logs.glob("*.log")))
    )


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop_pids(directory: Path, pids: list[int], grace: float) -> None:
    """SIGTERM each daemon's process group (a worker's executors are in it), SIGKILL after ``grace``.

    Every daemon was started as the leader of its own session, so its pid is the group id of
    the daemon and of the executor JVMs it launched; nothing else is in those groups.
    """
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap when it is our child
        if not any(_group_alive(pid) for pid in pids):
            return
        time.sleep(0.2)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def stop(directory: Path | None = None, grace: float = 30.0) -> ClusterInfo | None:
    """Stop the cluster of ``directory``, workers (and their executors) first; None if none ran.

    Reads ``cluster.json`` even when the master died, so orphaned workers are stopped too.
    """
    directory = (directory or cluster_dir()).resolve()
    try:
        info = ClusterInfo(**json.loads((directory / "cluster.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None
    workers = [p for p in info.worker_pids if _alive_as(p, WORKER_CLASS, directory)]
    _stop_pids(directory, workers, grace)
    if _alive_as(info.master_pid, MASTER_CLASS, directory):
        _stop_pids(directory, [info.master_pid], grace)
    (directory / "cluster.json").unlink(missing_ok=True)
    return info


def describe(info: ClusterInfo) -> str:
    """Human-readable state: master, workers (cores and memory in use), applications."""
    try:
        state = master_state(info)
    except (OSError, ValueError) as exc:
        return f"{info.master_url} (pid {info.master_pid}): web UI {info.webui_url} does not answer: {exc}"
    lines = [f"{info.master_url} {state.get('status')} (pid {info.master_pid}, web UI {info.webui_url}, "
             f"dir {info.directory})"]
    for w in state.get("workers", []):
        lines.append(f"  worker {w.get('id')} {w.get('state')}: cores {w.get('coresused')}/{w.get('cores')}, "
                     f"memory {w.get('memoryused')}/{w.get('memory')} MB")
    for kind in ("activeapps", "completedapps"):
        for app in state.get(kind, []):
            lines.append(f"  app {app.get('id')} {app.get('state')}: {app.get('name')}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- command line
