"""CPU seconds and resident memory of server processes, read from ``/proc``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
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
    """A number of ``/proc/PID/status`` (kB for sizes; the main thread's own for
    context switches), 0 when the process is gone."""
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


def _main_and_others(
    pid: int, read: Callable[[int], tuple[float, float]]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """``read(tid)`` for a process's main thread, and summed over its other threads
    (a thread that ends between the listing and the read is skipped)."""
    main = others = (0.0, 0.0)
    try:
        tids = [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return main, others
    for tid in tids:
        try:
            found = read(tid)
        except (OSError, ValueError):
            continue
        if tid == pid:
            main = found
        else:
            others = (others[0] + found[0], others[1] + found[1])
    return main, others


def _thread_ticks(pid: int, tid: int) -> tuple[float, float]:
    raw = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def thread_cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time of a process's main thread (a server's event loop) and of all its
    other threads together (the Raft thread, executors): what a second process for
    the Raft replica could take off the loop's core."""
    main, others = _main_and_others(pid, partial(_thread_ticks, pid))
    return sum(main), sum(others)


def context_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of a process's main thread so far:
    how often its event loop slept, and how often the scheduler took its core
    away while it could run (0, 0 when the process is gone)."""
    voluntary = _status_field(pid, "voluntary_ctxt_switches")
    return voluntary, _status_field(pid, "nonvoluntary_ctxt_switches")


def _thread_schedstat(pid: int, tid: int) -> tuple[float, float]:
    running, waiting = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[:2]
    return int(running) / 1e9, int(waiting) / 1e9


def run_delays(pid: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Seconds on a CPU and seconds runnable but waiting for one (``schedstat``), of
    a process's main thread and of its other threads together: a thread that
    waits for a core delays what it would have done, without costing CPU."""
    return _main_and_others(pid, partial(_thread_schedstat, pid))


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
