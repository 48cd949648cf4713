"""CPU seconds and resident memory of server processes, read from ``/proc``."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ProcSample",
    "context_switches",
    "cpu_seconds",
    "machine_busy_seconds",
    "peak_rss_kib",
    "rss_kib",
    "run_delays",
    "sample",
    "system_cpu_seconds",
    "thread_cpu_seconds",
    "tree",
]

_TICKS = os.sysconf("SC_CLK_TCK")


def _status_field(pid: int, name: str) -> int:
    """A ``kB`` field of ``/proc/PID/status`` (0 when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def _user_system_ticks(pid: int) -> tuple[int, int]:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0, 0
    # The command name may hold spaces and parentheses: split after the last ")".
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[11]), int(fields[12])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process (all its threads)."""
    return sum(_user_system_ticks(pid)) / _TICKS


def system_cpu_seconds(pid: int) -> float:
    """The kernel's share of :func:`cpu_seconds`: system calls, and on loopback the
    receiving side's TCP work done in the sender's call, and wake-ups."""
    return _user_system_ticks(pid)[1] / _TICKS


def thread_cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time of a process's main thread (a server's event loop) and of all its
    other threads together (the Raft thread, executors): what a second process for
    the Raft replica could take off the loop's core."""
    main = other = 0.0
    try:
        tids = [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return 0.0, 0.0
    for tid in tids:
        try:
            raw = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue  # the thread ended between the listing and the read
        fields = raw[raw.rindex(")") + 2 :].split()
        spent = (int(fields[11]) + int(fields[12])) / _TICKS
        if tid == pid:
            main = spent
        else:
            other += spent
    return main, other


def context_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of a process's main thread so far:
    how often its event loop slept, and how often the scheduler took its core
    away while it could run (0, 0 when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/status").read_text()
    except OSError:
        return 0, 0
    counts = dict(line.split(":", 1) for line in text.splitlines() if "ctxt_switches" in line)
    voluntary = counts.get("voluntary_ctxt_switches", "0")
    return int(voluntary), int(counts.get("nonvoluntary_ctxt_switches", "0"))


def run_delays(pid: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Seconds on a CPU and seconds runnable but waiting for one (``schedstat``), of
    a process's main thread and of its other threads together: a thread that
    waits for a core delays what it would have done, without costing CPU."""
    main = (0.0, 0.0)
    other = [0.0, 0.0]
    try:
        tids = [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return main, (0.0, 0.0)
    for tid in tids:
        try:
            running, waiting = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[:2]
        except (OSError, ValueError):
            continue  # the thread ended between the listing and the read
        spent = (int(running) / 1e9, int(waiting) / 1e9)
        if tid == pid:
            main = spent
        else:
            other[0] += spent[0]
            other[1] += spent[1]
    return main, (other[0], other[1])


def rss_kib(pid: int) -> int:
    return _status_field(pid, "VmRSS")


def peak_rss_kib(pid: int) -> int:
    """High-water mark of the resident set since the process started."""
    return _status_field(pid, "VmHWM")


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a launcher script may fork the real server)."""
    found = [pid]
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        found.extend(int(child) for child in children)
    return found


@dataclass(frozen=True)
class ProcSample:
    cpu_s: float
    rss_kib: int
    peak_rss_kib: int


def sample(pids: Iterable[int]) -> dict[int, ProcSample]:
    return {
        pid: ProcSample(cpu_seconds(pid), rss_kib(pid), peak_rss_kib(pid))
        for root in pids
        for pid in tree(root)
    }


def machine_busy_seconds() -> float:
    """CPU time every core spent on anything but idle and I/O wait, since boot."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return 0.0
    ticks = [int(v) for v in first[1:9]]  # user nice system idle iowait irq softirq steal
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / _TICKS
