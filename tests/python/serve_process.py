"""``lakehouse serve`` as a test starts it: in the background, ready when it says so, always stopped."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from conftest import BIN, PROJECT


@contextlib.contextmanager
def serve_process(env: dict[str, str], port: int, out: Path, err: Path,
                  cwd: Path = PROJECT, grace: float = 90) -> Iterator[subprocess.Popen[bytes]]:  # fmt: skip
    """``lakehouse serve --port PORT`` with its output in files; SIGTERM (then SIGKILL) on exit."""
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(
            [str(BIN / "lakehouse"), "serve", "--port", str(port)], env=env, cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
        )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()  # the JVM gets SIGTERM from its parent-death signal
                proc.wait()


def wait_ready(proc: subprocess.Popen[bytes], out: Path, err: Path, timeout: float = 300) -> str:
    """The server's stdout once it says it is ready; fails with its output if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = out.read_text(errors="replace")
        if "Stop with Ctrl-C" in text:
            return text
        assert proc.poll() is None, f"lakehouse serve exited with {proc.returncode}:\n{text}\n{err.read_text()}"
        time.sleep(0.5)
    raise AssertionError(f"lakehouse serve not ready after {timeout}s:\n{err.read_text()}")
