"""Free TCP ports on loopback, chosen by the kernel."""

from __future__ import annotations

import socket
from contextlib import ExitStack

__all__ = ["free_port", "free_ports"]


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on ``host`` a moment ago (racy by nature; fine for tests)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host``: all held open together while picked,
    so the kernel cannot hand out the same port twice."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports
