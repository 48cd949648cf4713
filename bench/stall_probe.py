"""The worst event-loop stall an unauthenticated request can cause (docs/security.md).

A dev server runs in its own process. A background client reads
``sys/seal-status`` over one kept-alive connection, back to back, and records
each latency; meanwhile each phase sends one kind of hostile input without a
token (big, deep and wide bodies, chunked bodies, slowloris connections), then
one with a token for comparison. The worst latency of the background client
during a phase, minus nothing, is the stall that phase caused: every client of
the node waits that long.

    PYTHONPATH=$PWD python -m bench.stall_probe

A benchmark, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import json
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from api.translate import UNAUTHENTICATED_BODY_LIMIT
from bench.procs import Proc, python_command
from harness.ports import free_port
from harness.rest import Session, call
from harness.wait import wait_until

__all__ = ["main"]

TOKEN = "probe-root"
MIB = 1024 * 1024
#: Bodies that fill the unauthenticated limit, less room for the JSON around them.
AT_LIMIT = UNAUTHENTICATED_BODY_LIMIT - 64
_PHASE_SECONDS = 3.0


@dataclass
class Phase:
    name: str
    attack: Callable[[int, threading.Event], list[int]]
    authenticated: bool = False


def _raw(port: int, data: bytes, read: bool = True) -> int:
    """Send ``data`` on a new connection; the answer's status (0: none, or reset)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        try:
            sock.sendall(data)
            if not read:
                return 0
            head = sock.recv(4096)
        except OSError:
            return 0
    try:
        return int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def _put(path: str, body: bytes, token: str = "", chunked: bool = False) -> bytes:
    lines = [f"PUT {path} HTTP/1.1", "Host: probe", "Content-Type: application/json"]
    if token:
        lines.append(f"X-Vault-Token: {token}")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
        step = 64 * 1024
        framed = b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + step]), body[i : i + step])
            for i in range(0, len(body), step)
        )
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + framed + b"0\r\n\r\n"
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _repeat(data: bytes) -> Callable[[int, threading.Event], list[int]]:
    def attack(port: int, stop: threading.Event) -> list[int]:
        statuses = []
        while not stop.is_set():
            statuses.append(_raw(port, data))
        return statuses

    return attack


def _slowloris(count: int) -> Callable[[int, threading.Event], list[int]]:
    def attack(port: int, stop: threading.Event) -> list[int]:
        socks = []
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"GET /v1/sys/health HTTP/1.1\r\nHost: probe\r\n")
            socks.append(sock)
        closed = 0
        while not stop.is_set():
            for sock in socks:
                try:
                    sock.sendall(b"X: 1\r\n")
                except OSError:
                    closed += 1
            stop.wait(0.5)
        for sock in socks:
            sock.close()
        return [closed]

    return attack


def _wide(size: int) -> bytes:
    return b'{"password": [' + b"[]," * (size // 3) + b"[]]}"


def _digits(size: int) -> bytes:
    return b'{"password": [' + b"12345678901234567890123," * (size // 24) + b"1]}"


def _policy(lines: int) -> bytes:
    text = "\n".join(f'path "p/{n}/*" {{ capabilities = ["read"] }}' for n in range(lines))
    return json.dumps({"policy": text}).encode()


PHASES = [
    Phase("nothing (baseline)", lambda port, stop: [stop.wait(_PHASE_SECONDS) and 0]),
    Phase("32 MiB body to secret/, no token", _repeat(_put("/v1/secret/data/x", b"x" * 32 * MIB))),
    Phase(
        "1 MiB body to sys/unseal (over the limit)",
        _repeat(_put("/v1/sys/unseal", b"[" * MIB)),
    ),
    Phase(
        "32 MiB chunked body to sys/unseal",
        _repeat(_put("/v1/sys/unseal", b"[" * 32 * MIB, chunked=True)),
    ),
    Phase("256 KiB of '[' to sys/unseal", _repeat(_put("/v1/sys/unseal", b"[" * AT_LIMIT))),
    Phase(
        "256 KiB wide JSON to a login path",
        _repeat(_put("/v1/auth/userpass/login/x", _wide(AT_LIMIT))),
    ),
    Phase(
        "256 KiB of long integers to a login path",
        _repeat(_put("/v1/auth/userpass/login/x", _digits(AT_LIMIT))),
    ),
    Phase(
        "256 KiB wide JSON with a BOM to a login path",
        _repeat(_put("/v1/auth/userpass/login/x", b"\xef\xbb\xbf" + _wide(AT_LIMIT))),
    ),
    Phase("300 slowloris connections", _slowloris(300)),
    Phase(
        "10,000-line policy, WITH a token",
        _repeat(_put("/v1/sys/policies/acl/big", _policy(10_000), TOKEN)),
        authenticated=True,
    ),
    Phase(
        "30 MiB wide JSON to secret/, WITH a token",
        _repeat(_put("/v1/secret/data/x", b'{"data": ' + _wide(30 * MIB) + b"}", TOKEN)),
        authenticated=True,
    ),
]


def _measure(port: int, stop: threading.Event, latencies: list[float]) -> None:
    session = Session("127.0.0.1", port, timeout=120)
    while not stop.is_set():
        started = time.perf_counter()
        session.request("GET", "/v1/sys/seal-status")
        latencies.append(time.perf_counter() - started)
    session.close()


def _run_phase(port: int, phase: Phase) -> tuple[float, float, list[int]]:
    stop = threading.Event()
    latencies: list[float] = []
    results: list[int] = []
    probe = threading.Thread(target=_measure, args=(port, stop, latencies))
    attacker = threading.Thread(target=lambda: results.extend(phase.attack(port, stop)))
    probe.start()
    time.sleep(0.2)
    attacker.start()
    time.sleep(_PHASE_SECONDS)
    stop.set()
    attacker.join()
    probe.join()
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 100 else max(latencies)
    return max(latencies) * 1000, p99 * 1000, results


def main() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = Proc(
            "probe-server",
            [
                *python_command(),
                "-m",
                "api.entrypoint",
                "server",
                "-dev",
                "-dev-listen-address",
                f"127.0.0.1:{port}",
                "-dev-root-token-id",
                TOKEN,
            ],
            Path(tmp) / "server.log",
        ).start()
        try:
            wait_until(
                lambda: call(port, "GET", "/v1/sys/health", timeout=30).status == 200,
                30,
                "dev server",
            )
            call(
                port, "POST", "/v1/sys/auth/userpass", {"type": "userpass"}, timeout=30, token=TOKEN
            )
            print(f"{'phase':<44} {'worst ms':>9} {'p99 ms':>8}  answers")
            for phase in PHASES:
                worst, p99, results = _run_phase(port, phase)
                answers = json.dumps(sorted(set(results)))
                print(f"{phase.name:<44} {worst:>9.1f} {p99:>8.1f}  {answers} x{len(results)}")
                server.check_alive()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
