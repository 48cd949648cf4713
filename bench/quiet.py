"""Waiting for the machine to be quiet: this 2-core box is shared with test runs.

Before each measurement the busy CPU of everything that is neither the target's
processes nor the generator is sampled; the run waits (up to a limit) until it
is under a threshold. Every record also carries what the other load was during
its own window (``other_cpu_pct``), so a disturbed figure can be told apart.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Sequence

from bench.process_stats import cpu_seconds, machine_busy_seconds, tree

__all__ = ["other_cpu_pct", "wait_for_quiet"]


def _own_cpu(pids: Sequence[int]) -> float:
    times = os.times()
    own = times.user + times.system
    return own + sum(cpu_seconds(p) for root in pids for p in tree(root))


async def other_cpu_pct(pids: Sequence[int], seconds: float = 1.0) -> float:
    busy0, own0 = machine_busy_seconds(), _own_cpu(pids)
    await asyncio.sleep(seconds)
    busy1, own1 = machine_busy_seconds(), _own_cpu(pids)
    return max(0.0, 100 * ((busy1 - busy0) - (own1 - own0)) / seconds)


async def wait_for_quiet(pids: Sequence[int], threshold: float, timeout: float) -> float:
    """Until other processes use under ``threshold`` % of a core for 2 s running."""
    deadline = time.monotonic() + timeout
    calm = 0
    warned = False
    while True:
        other = await other_cpu_pct(pids)
        calm = calm + 1 if other < threshold else 0
        if calm >= 2 or time.monotonic() > deadline:
            return other
        if not warned and other >= threshold:
            print(
                f"# waiting for a quiet machine (other load {other:.0f}% of a core)",
                file=sys.stderr,
                flush=True,
            )
            warned = True
