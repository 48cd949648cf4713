"""The load generator: ``concurrency`` closed-loop workers drive one operation for a fixed time.

Each worker sends a request, waits for the whole answer, records the latency and
sends the next one. A warm-up period runs first and is not measured. Every latency
inside the measured window is kept, so percentiles are exact. Errors are counted by
kind (``http 503``, ``ClientConnectorError``, ...). The server processes' CPU time and
peak RSS are read from ``/proc`` at the window's edges.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bench.process_stats import machine_busy_seconds, sample
from bench.stats import Summary, summarise

__all__ = ["HTTPStatusError", "LoadResult", "Op", "Worker", "expect", "run_load"]


class HTTPStatusError(Exception):
    def __init__(self, status: int, body: bytes = b"") -> None:
        super().__init__(f"http {status}: {body[:200]!r}")
        self.status = status


@dataclass
class Worker:
    """What one closed-loop worker carries between operations."""

    index: int
    session: aiohttp.ClientSession
    rng: random.Random
    state: dict[str, Any] = field(default_factory=dict)


Op = Callable[[Worker], Awaitable[None]]


async def expect(response: aiohttp.ClientResponse, *statuses: int) -> bytes:
    """The body; raises ``HTTPStatusError`` unless the status is one of ``statuses``."""
    body = await response.read()
    if response.status not in (statuses or (200, 204)):
        raise HTTPStatusError(response.status, body)
    return body


def _kind(exc: BaseException) -> str:
    if isinstance(exc, HTTPStatusError):
        return f"http {exc.status}"
    return type(exc).__name__


@dataclass
class LoadResult:
    concurrency: int
    seconds: float
    latency: Summary
    errors: dict[str, int]
    server_cpu_s: float
    server_peak_rss_kib: list[int]
    server_rss_kib: list[int]
    client_cpu_s: float
    #: CPU time the whole machine spent busy in the window, every process included.
    machine_busy_s: float = 0.0
    first_error: str = ""

    @property
    def ops(self) -> int:
        return self.latency.count

    @property
    def throughput(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        lat = self.latency
        return {
            "concurrency": self.concurrency,
            "seconds": round(self.seconds, 3),
            "ops": self.ops,
            "throughput": round(self.throughput, 1),
            "p50_ms": round(lat.p50_ms, 3),
            "p90_ms": round(lat.p90_ms, 3),
            "p99_ms": round(lat.p99_ms, 3),
            "max_ms": round(lat.max_ms, 3),
            "mean_ms": round(lat.mean_ms, 3),
            "errors": self.errors,
            "first_error": self.first_error,
            "server_cpu_s": round(self.server_cpu_s, 2),
            "server_cpu_pct": round(100 * self.server_cpu_s / self.seconds, 1)
            if self.seconds
            else 0.0,
            "server_peak_rss_mib": [round(k / 1024, 1) for k in self.server_peak_rss_kib],
            "server_rss_mib": [round(k / 1024, 1) for k in self.server_rss_kib],
            "client_cpu_s": round(self.client_cpu_s, 2),
            "other_cpu_pct": round(self.other_cpu_pct, 1),
        }

    @property
    def other_cpu_pct(self) -> float:
        """Busy CPU of everything else on the machine (another job skews a run)."""
        if not self.seconds:
            return 0.0
        other = self.machine_busy_s - self.server_cpu_s - self.client_cpu_s
        return 100 * max(0.0, other) / self.seconds


def _client_cpu() -> float:
    times = os.times()
    return times.user + times.system


async def run_load(
    op: Op,
    *,
    concurrency: int,
    seconds: float,
    warmup: float = 1.0,
    pids: Sequence[int] = (),
    seed: int = 1,
    timeout: float = 30.0,
) -> LoadResult:
    """Run ``op`` in ``concurrency`` closed loops; measure ``seconds`` after ``warmup``."""
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    first_error: list[str] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    window_start = start + warmup
    window_end = window_start + seconds
    edges: dict[str, Any] = {}

    async def mark_edges() -> None:
        await asyncio.sleep(max(0.0, window_start - loop.time()))
        edges["procs0"], edges["cpu0"] = sample(pids), _client_cpu()
        edges["busy0"] = machine_busy_seconds()
        await asyncio.sleep(max(0.0, window_end - loop.time()))
        edges["procs1"], edges["cpu1"] = sample(pids), _client_cpu()
        edges["busy1"] = machine_busy_seconds()

    async def work(worker: Worker) -> None:
        perf = time.perf_counter
        while loop.time() < window_end:
            began = perf()
            try:
                await op(worker)
            except (TimeoutError, aiohttp.ClientError, HTTPStatusError, OSError) as exc:
                now = loop.time()
                if window_start <= now <= window_end:
                    errors[_kind(exc)] += 1
                    if not first_error:
                        first_error.append(str(exc)[:300])
                if not isinstance(exc, HTTPStatusError):
                    await asyncio.sleep(0.01)  # a refused connection must not spin
                continue
            now = loop.time()
            if window_start <= now <= window_end:
                latencies.append(perf() - began)

    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=client_timeout) as session:
        workers = [
            Worker(index, session, random.Random(seed * 1000 + index))
            for index in range(concurrency)
        ]
        await asyncio.gather(mark_edges(), *(work(w) for w in workers))
    before, after = edges["procs0"], edges["procs1"]
    cpu = sum(after[pid].cpu_s - before[pid].cpu_s for pid in after if pid in before)
    return LoadResult(
        concurrency=concurrency,
        seconds=seconds,
        latency=summarise(latencies),
        errors=dict(errors),
        server_cpu_s=cpu,
        server_peak_rss_kib=[s.peak_rss_kib for s in after.values()],
        server_rss_kib=[s.rss_kib for s in after.values()],
        client_cpu_s=edges["cpu1"] - edges["cpu0"],
        machine_busy_s=edges["busy1"] - edges["busy0"],
        first_error=first_error[0] if first_error else "",
    )
