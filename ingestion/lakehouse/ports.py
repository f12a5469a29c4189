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


def free_port(avoid: tuple[int | None, ...] = ()) -> int:
    """A TCP port on 127.0.0.1 that is free right now (tests, the controller listener), not
    one of ``avoid`` (ports chosen for other listeners that are not bound yet)."""
    return free_ports(1, avoid)[0]


def free_ports(count: int, avoid: tuple[int | None, ...] = ()) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1, none of ``avoid``.

    The sockets stay bound until all are chosen: a port released by one call is otherwise
    free to come back from the next, and two listeners given the same port collide (seen in
    CI: a Spark master's RPC and web UI ports).
    """
    sockets: list[socket.socket] = []
    try:
        ports: list[int] = []
        while len(ports) < count:
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
            if port not in avoid:
                ports.append(port)
        return ports
    finally:
        for s in sockets:
            s.close()
