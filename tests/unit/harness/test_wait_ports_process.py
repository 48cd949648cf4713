"""``harness.wait``, ``harness.ports`` and ``harness.process.terminate`` on real sockets
and real child processes."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from harness.ports import free_port, free_ports
from harness.process import terminate
from harness.wait import WaitTimeout, wait_until


def test_a_port_is_not_handed_out_again_soon_after() -> None:
    """The kernel may give a just-closed port to the next bind to port 0 (a CI run
    gave a replication pair's primary and secondary one port); 2,000 picks one at a
    time would share dozens of ports by chance alone in a range of ~28,000."""
    picked = [free_port() for _ in range(2000)]
    assert len(set(picked)) == len(picked)


def test_each_xdist_worker_takes_only_its_own_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers pick at once; each takes only ports of its own class, so one
    worker's server never binds a port another just handed out."""
    for workers in (2, 3):
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(workers))
        for worker in range(workers):
            monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
            assert {(port >> 1) % workers for port in free_ports(20)} == {worker}


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(8)

    assert len(set(ports)) == 8
    for port in [*ports, free_port()]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_timed_out_wait_fails_like_an_assert_and_names_the_last_answer() -> None:
    answers = iter(range(1000))

    with pytest.raises(WaitTimeout, match=r"waiting for a big number \(last: \d+\)") as info:
        wait_until(lambda: next(answers) // 1000, 0.05, "a big number", every=0.01)
    assert isinstance(info.value, AssertionError)


def test_a_wait_returns_the_first_truthy_answer_and_respects_every() -> None:
    calls: list[float] = []

    def third() -> str | None:
        calls.append(time.monotonic())
        return "yes" if len(calls) == 3 else None

    assert wait_until(third, 10, "the third call", every=0.05) == "yes"
    assert calls[2] - calls[0] >= 0.09


def _child(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"  # its signal handlers are in place
    proc.stdout.close()
    return proc


def test_terminate_stops_a_process_that_exits_on_sigterm() -> None:
    proc = _child("import time; print('ready', flush=True); time.sleep(60)")

    assert terminate(proc, 10) is True
    assert proc.returncode == -15


def test_terminate_kills_a_process_that_ignores_sigterm() -> None:
    ignores = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    proc = _child(ignores)

    assert terminate(proc, 0.3) is False
    assert proc.returncode == -9
