"""Paired before/after of the CPU per KV v2 write, for a machine whose load moves.

    python -m bench.loop_ab --slices 16 --seconds 3 a5ca847 .         # three nodes
    python -m bench.loop_ab --one --slices 12 --seconds 3 a5ca847 .   # one node, inmem
    python -m bench.loop_ab --one --storage file HEAD .                 # one node, file
    python -m bench.loop_ab --one --workload kv2-read c1608aa^ c1608aa  # reads
    python -m bench.loop_ab --concurrency 1 --slices 12 HEAD .           # one writer's p50

Both revisions' servers (``.`` is the working tree; anything else is exported with
``git archive``) run at the same time, and short slices of KV v2 writes (or
``--workload``: "per write" then means per operation) at c=32
go to each in turn (ABBA order), so that another job's load falls on both alike:
``bench.writecost`` starts them one after the other, and on a shared two-core
machine its rounds moved by ±20 % with the other load. Per slice: the serving
process's event-loop (main) thread, its other threads and the whole process, in
µs of CPU per write; with three nodes also a follower's (the mean of the standbys:
whole process, loop thread, other threads); at the end the medians and the paired
loop (and follower) differences.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from bench.coffer_targets import CofferCluster, CofferSingle, ServeFlags
from bench.loadgen import HTTPStatusError, Op, run_load
from bench.process_stats import cpu_seconds, thread_cpu_seconds
from bench.targets import Target
from bench.workloads import workload

__all__ = ["abba", "main", "measure_slice", "paired_median", "prepare", "serving_pid"]

T = TypeVar("T")

CONCURRENCY = 32


def serving_pid(target: Target) -> int:
    if isinstance(target, CofferCluster) and target.active.proc is not None:
        return target.active.proc.pid
    return target.pids()[0]


def prepare(target: Target, kind: str = "kv2-write") -> Op:
    view = "active" if isinstance(target, CofferCluster) else "node"
    endpoints = target.endpoints(view)
    load = workload("coffer", kind)
    for attempt in range(5):
        try:
            asyncio.run(load.setup(endpoints))
            break
        except HTTPStatusError as exc:  # an election on a busy machine
            if exc.status != 503 or attempt == 4:
                raise
            time.sleep(2.0)
    op = load.make_op(endpoints)
    asyncio.run(run_load(op, concurrency=CONCURRENCY, seconds=2.0, warmup=0.0))
    return op


def _followers(target: Target, serving: int) -> list[int]:
    if not isinstance(target, CofferCluster):
        return []
    pids = [n.proc.pid for n in target.nodes if n.proc is not None]
    return [pid for pid in pids if pid != serving]


def _follower_cpu(pids: list[int]) -> tuple[float, float, float]:
    """Summed over ``pids``: (process, loop thread, other threads) CPU seconds."""
    process = loop = other = 0.0
    for pid in pids:
        threads = thread_cpu_seconds(pid)
        process += cpu_seconds(pid)
        loop += threads[0]
        other += threads[1]
    return process, loop, other


def measure_slice(target: Target, op: Op, seconds: float, concurrency: int) -> dict[str, float]:
    """One slice of load on ``target``: CPU per operation of the serving process by
    thread (and of the followers' on average), rate, p50 and errors."""
    pid = serving_pid(target)
    followers = _followers(target, pid)
    threads, process = thread_cpu_seconds(pid), cpu_seconds(pid)
    before = _follower_cpu(followers)
    result = asyncio.run(run_load(op, concurrency=concurrency, seconds=seconds, warmup=0.0))
    threads_after, process_after = thread_cpu_seconds(pid), cpu_seconds(pid)
    after = _follower_cpu(followers)
    ops = max(result.ops, 1)
    record = {
        "loop_us": 1e6 * (threads_after[0] - threads[0]) / ops,
        "other_threads_us": 1e6 * (threads_after[1] - threads[1]) / ops,
        "process_us": 1e6 * (process_after - process) / ops,
        "writes_per_s": result.throughput,
        "p50_us": 1e3 * result.latency.p50_ms,
        "errors": float(sum(result.errors.values())),
    }
    if followers:
        per = 1e6 / ops / len(followers)
        record["follower_us"] = per * (after[0] - before[0])
        record["follower_loop_us"] = per * (after[1] - before[1])
        record["follower_other_us"] = per * (after[2] - before[2])
    return record


def abba(names: Sequence[T], slices: int) -> Iterator[tuple[int, T]]:
    """``(slice, name)`` for ``slices`` rounds over ``names``, every other round in
    reverse (A B, B A, A B, ...), so a drift in the machine falls on each alike."""
    for index in range(slices):
        for name in names if index % 2 == 0 else names[::-1]:
            yield index, name


def paired_median(
    before: list[dict[str, float]], before_key: str, after: list[dict[str, float]], after_key: str
) -> float:
    """The median of ``after[i][after_key] - before[i][before_key]``: slice by slice,
    not a difference of medians (the slices side by side met the same machine)."""
    pairs = zip(before, after, strict=True)
    return statistics.median(b[after_key] - a[before_key] for a, b in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.loop_ab")
    parser.add_argument("revisions", nargs=2, help="before and after ('.' = working tree)")
    parser.add_argument("--slices", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--one", action="store_true", help="one node, not three")
    parser.add_argument(
        "--storage", choices=("inmem", "file"), default="inmem", help="the one node's storage"
    )
    parser.add_argument(
        "--concurrency", type=int, default=CONCURRENCY, help="clients (1: latency of one writer)"
    )
    parser.add_argument(
        "--workload", default="kv2-write", help="a bench.workloads name (kv2-read: reads)"
    )
    args = parser.parse_args(argv)
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    targets: list[Target] = []
    for revision in args.revisions:
        flags = ServeFlags(revision="" if revision == "." else revision)
        targets.append(CofferSingle(args.storage, flags) if args.one else CofferCluster(3, flags))
    rows: dict[str, list[dict[str, float]]] = {r: [] for r in args.revisions}
    try:
        for target in targets:
            target.__enter__()
        ops = [prepare(t, args.workload) for t in targets]
        for index, which in abba((0, 1), args.slices):
            record = measure_slice(targets[which], ops[which], args.seconds, args.concurrency)
            rows[args.revisions[which]].append(record)
            shown: dict[str, Any] = {k: round(v) for k, v in record.items()}
            print(json.dumps({"slice": index, "revision": args.revisions[which], **shown}))
    finally:
        for target in targets:
            target.__exit__(None, None, None)
    print("medians, µs of CPU per write (loop thread / other threads / process), writes/s, p50:")
    for revision, records in rows.items():
        loop = statistics.median(r["loop_us"] for r in records)
        other = statistics.median(r["other_threads_us"] for r in records)
        process = statistics.median(r["process_us"] for r in records)
        rate = statistics.median(r["writes_per_s"] for r in records)
        p50 = statistics.median(r["p50_us"] for r in records)
        print(
            f"  {revision:>10} {loop:6.0f} / {other:5.0f} / {process:6.0f}"
            f"  {rate:6.0f}/s  p50 {p50:5.0f} µs"
        )
    before, after = (rows[r] for r in args.revisions)
    paired = paired_median(before, "loop_us", after, "loop_us")
    print(f"  paired loop difference (after - before): median {paired:.0f} µs")
    pairs = list(zip(before, after, strict=True))
    ratios = [b["writes_per_s"] / max(a["writes_per_s"], 1) for a, b in pairs]
    p50s = [b["p50_us"] / max(a["p50_us"], 1) for a, b in pairs]
    print(
        f"  paired after/before: writes/s median {statistics.median(ratios):.3f},"
        f" p50 median {statistics.median(p50s):.3f}"
    )
    if all("follower_us" in r for r in before + after):
        _print_followers(rows, before, after)
    return 0


def _print_followers(
    rows: dict[str, list[dict[str, float]]],
    before: list[dict[str, float]],
    after: list[dict[str, float]],
) -> None:
    print("follower medians, µs of CPU per write per follower (process / loop / other threads):")
    for revision, records in rows.items():
        process = statistics.median(r["follower_us"] for r in records)
        loop = statistics.median(r["follower_loop_us"] for r in records)
        other = statistics.median(r["follower_other_us"] for r in records)
        print(f"  {revision:>10} {process:6.0f} / {loop:5.0f} / {other:5.0f}")
    paired = paired_median(before, "follower_us", after, "follower_us")
    print(f"  paired follower difference (after - before): median {paired:.0f} µs")


if __name__ == "__main__":
    sys.exit(main())
