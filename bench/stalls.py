"""Where a cluster's writes stall: acknowledgements per 100 ms, and the dumps beside them.

    python -m bench.stalls --seconds 10                 # this tree, three nodes, c=32
    python -m bench.stalls --seconds 10 --revision 1c0f435

Mean throughput hides a cluster-wide pause that recurs: every node compacts its
Raft log at the same index, so their dumps fall together. This drives KV v2
writes at c=32 and records when each one was acknowledged; it prints the
acknowledgements of each 100 ms window, the windows under 60 % of the median,
the longest gaps between two acknowledgements, and when a node's dump file
changed (``dump.jsonl``, polled every 20 ms), all in seconds from the first
acknowledgement.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

from bench.coffer_targets import CofferCluster, ServeFlags
from bench.loadgen import Op, Worker, run_load
from bench.workloads import workload

__all__ = ["main"]

WINDOW = 0.1
LOW = 0.6


async def _watch_dumps(root: Path, until: float, seen: list[tuple[float, str]]) -> None:
    """Each change of a node's dump file (the temporary one while it is written)."""
    mtimes: dict[Path, int] = {}
    while time.perf_counter() < until:
        for path in root.rglob("dump.jsonl*"):
            try:
                mtime = path.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            if mtimes.get(path) != mtime:
                mtimes[path] = mtime
                seen.append((time.perf_counter(), f"{path.parent.parent.name}/{path.name}"))
        await asyncio.sleep(0.02)


async def _measure(target: CofferCluster, op: Op, seconds: float) -> dict[str, object]:
    acked: list[float] = []
    dumps: list[tuple[float, str]] = []

    async def timed(worker: Worker) -> None:
        await op(worker)
        acked.append(time.perf_counter())

    watcher = asyncio.ensure_future(
        _watch_dumps(target.workdir, time.perf_counter() + seconds + 1.5, dumps)
    )
    result = await run_load(timed, concurrency=32, seconds=seconds, warmup=1.0)
    await watcher
    start = acked[0]
    counts: dict[int, int] = {}
    for at in acked:
        window = int((at - start) / WINDOW)
        counts[window] = counts.get(window, 0) + 1
    windows = [counts.get(i, 0) for i in range(max(counts) + 1)][:-1]  # the last is partial
    median = statistics.median(windows)
    gaps = sorted(((b - a, a) for a, b in itertools.pairwise(acked)), reverse=True)
    return {
        "writes_per_s": round(result.throughput),
        "p50_ms": round(result.latency.p50_ms, 2),
        "p99_ms": round(result.latency.p99_ms, 2),
        "max_ms": round(result.latency.max_ms, 2),
        "per_window": windows,
        "low_windows": [
            [round(i * WINDOW, 1), n] for i, n in enumerate(windows) if n < LOW * median
        ],
        "longest_gaps_ms": [[round(1e3 * g, 1), round(at - start, 2)] for g, at in gaps[:8]],
        "dumps": [[round(at - start, 2), name] for at, name in dumps if at >= start],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.stalls")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--revision", default="", help="a git revision (default: this tree)")
    args = parser.parse_args(argv)
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    target = CofferCluster(3, ServeFlags(revision=args.revision))
    with target:
        load = workload("coffer", "kv2-write")
        endpoints = target.endpoints("active")
        asyncio.run(load.setup(endpoints))
        op = load.make_op(endpoints)
        for _ in range(args.rounds):
            print(json.dumps(asyncio.run(_measure(target, op, args.seconds))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
