"""TCP port checks shared by the local servers the project starts (Kafka, Spark, PostgreSQL, Thrift)."""

from __future__ import annotations

import socket


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True when ``host:port`` cannot be bound now (another server, or not an address here).

    Binding, not connecting: a port held by a server that does not answer yet counts as taken.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (tests, the controller listener)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
