"""Free TCP ports on loopback, chosen by the kernel, never handed out twice lately.

A port is picked by binding to port 0 and closing the socket, so the kernel may
give the same port to the very next pick (here 138 of 2,000 picks in a row
repeated one): two servers of one test (a replication pair's primary and
secondary, picked before either starts) then met on one port, and one of them
failed to bind (a CI run's serial stage). This process remembers the ports it
handed out lately and asks the kernel again for any of them. Under pytest-xdist
each worker also takes only its own class of ports (half the port, modulo the
number of workers: the kernel's binds to port 0 give odd ports, leaving even
ones to outgoing connections), so two workers never hand out the same one.
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import ExitStack

__all__ = ["free_port", "free_ports"]

#: How many of the latest ports are never handed out again: far more than any one
#: test's servers, far fewer than the kernel's ephemeral range (about 28,000).
RECENT_PORTS = 4096
#: Kernel picks in a row that may all be refused before giving up.
_TRIES = 1024


def _worker_share() -> tuple[int, int]:
    """(this worker's index, the number of workers) under pytest-xdist, else (0, 1)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 1:
        return int(worker[2:]) % int(count), int(count)
    return 0, 1


_lock = threading.Lock()
#: The latest ports handed out, oldest first (a dict keeps insertion order).
_recent: dict[int, None] = {}


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on ``host`` a moment ago (racy by nature; fine for tests)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host``, none handed out lately by this
    process nor ever by another xdist worker: all held open together while
    picked, so the kernel cannot give one of them (or one refused) twice."""
    share, workers = _worker_share()
    with _lock, ExitStack() as stack:
        ports: list[int] = []
        for _ in range(_TRIES + count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
            if (port >> 1) % workers == share and port not in _recent:
                ports.append(port)
                if len(ports) == count:
                    break
        else:
            raise OSError(f"no free port on {host} that was not handed out lately")
        for port in ports:
            _remember(port)
        return ports


def _remember(port: int) -> None:
    _recent[port] = None
    if len(_recent) > RECENT_PORTS:
        del _recent[next(iter(_recent))]
