"""The /proc readings the benchmarks divide by writes: system time is part of the total."""

from __future__ import annotations

import os
import time

from bench.process_stats import context_switches, cpu_seconds, run_delays, system_cpu_seconds


def _spend_in_kernel(calls: int) -> None:
    fd = os.open("/dev/null", os.O_WRONLY)
    try:
        for _ in range(calls):
            os.write(fd, b"x")
    finally:
        os.close(fd)


def test_system_time_grows_with_system_calls_and_stays_within_the_total() -> None:
    pid = os.getpid()
    total_before, system_before = cpu_seconds(pid), system_cpu_seconds(pid)
    _spend_in_kernel(300_000)
    total, system = cpu_seconds(pid), system_cpu_seconds(pid)

    assert system > system_before
    assert system - system_before <= total - total_before
    assert 0 < system <= total


def test_a_process_that_is_gone_reads_as_zero() -> None:
    assert cpu_seconds(2**22 + 1) == 0.0
    assert system_cpu_seconds(2**22 + 1) == 0.0


def test_a_thread_that_sleeps_counts_voluntary_switches() -> None:
    pid = os.getpid()
    voluntary, involuntary = context_switches(pid)
    for _ in range(20):
        time.sleep(0.001)
    after = context_switches(pid)

    assert after[0] >= voluntary + 20
    assert after[1] >= involuntary
    assert context_switches(2**22 + 1) == (0, 0)


def test_run_delays_count_this_threads_time_on_a_cpu() -> None:
    pid = os.getpid()
    (running, waiting), _ = run_delays(pid)
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    (running_after, waiting_after), _ = run_delays(pid)

    assert running_after - running >= 0.04
    assert waiting_after >= waiting
    assert run_delays(2**22 + 1) == ((0.0, 0.0), (0.0, 0.0))
