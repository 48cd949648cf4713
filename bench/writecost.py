"""CPU per KV v2 write of the serving process, commit against commit (issue 16).

    python -m bench.writecost --rounds 3 --seconds 5 567f341 HEAD
    python -m bench.writecost --rounds 1 --seconds 8 --profile /tmp/spy HEAD

For every round and every revision (``.`` is the working tree; anything else is
exported with ``git archive``, as the ``perfpass`` suite does), one node on
``inmem`` and then three Raft nodes are started afresh and driven with KV v2
writes at concurrency 32. The figure is the CPU time (user + system, every
thread, from ``/proc``) the serving process spent per write: the node itself,
or the active node of the three; the whole cluster's is printed too. Rounds
interleave the revisions so that drift on this shared machine hits all alike;
medians are printed at the end, with the serving process's event-loop (main)
thread alone (``loop_us``). With ``--profile``, py-spy samples the serving
process's GIL holder at 250 Hz during each measured window (raw stacks kept in
that directory) and the busiest functions are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.coffer_targets import CofferCluster, CofferSingle, ServeFlags
from bench.loadgen import HTTPStatusError, run_load
from bench.process_stats import sample, thread_cpu_seconds
from bench.profile_suite import RATE, _py_spy
from bench.profiling import summarise_collapsed
from bench.quiet import wait_for_quiet
from bench.targets import Target
from bench.workloads import workload

__all__ = ["main", "measure"]

CONCURRENCY = 32


def measure(make: Callable[[], Target], seconds: float, spy_out: Path | None) -> dict[str, Any]:
    """One fresh target: warm up, then ``seconds`` of KV v2 writes; CPU µs per write."""
    with make() as target:
        cluster = isinstance(target, CofferCluster)
        endpoints = target.endpoints("active" if cluster else "node")
        load = workload("coffer", "kv2-write")
        _setup(load, endpoints)
        op = load.make_op(endpoints)
        asyncio.run(run_load(op, concurrency=CONCURRENCY, seconds=1.0, warmup=0.0))
        pids = target.pids()
        active = target.active.proc if isinstance(target, CofferCluster) else None
        serving = active.pid if active is not None else pids[0]
        asyncio.run(wait_for_quiet(pids, 40.0, 20.0))
        spy = None
        if spy_out is not None:
            argv = [_py_spy(), "record", "-p", str(serving), "-r", str(RATE), "-f", "raw"]
            argv += ["-d", str(int(seconds)), "-o", str(spy_out), "--gil"]
            spy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
        before, loop_before = sample(pids), thread_cpu_seconds(serving)[0]
        result = asyncio.run(
            run_load(op, concurrency=CONCURRENCY, seconds=seconds, warmup=0.0, pids=pids)
        )
        after, loop_after = sample(pids), thread_cpu_seconds(serving)[0]
        if spy is not None:
            spy.wait(60)
        ops = max(1, result.ops)
        per = {pid: (after[pid].cpu_s - before[pid].cpu_s) * 1e6 / ops for pid in after}
        return {
            "writes_per_s": round(result.throughput),
            "serving_us": round(per.get(serving, 0.0)),
            # The serving process's event-loop (main) thread alone.
            "loop_us": round((loop_after - loop_before) * 1e6 / ops),
            "total_us": round(sum(per.values())),
            "p50_ms": round(result.latency.p50_ms, 2),
            "other_cpu_pct": round(result.other_cpu_pct),
            "errors": result.errors,
        }


def _setup(load: Any, endpoints: Any, attempts: int = 3) -> None:
    """Seed the keys; a 503 while the cluster elects again (busy machine) is retried."""
    for attempt in range(attempts):
        try:
            asyncio.run(load.setup(endpoints))
            return
        except HTTPStatusError as exc:
            if exc.status != 503 or attempt == attempts - 1:
                raise
            time.sleep(2.0)


def _top(path: Path, count: int = 8) -> list[str]:
    with path.open() as lines:
        summary = summarise_collapsed(lines, RATE, top=count)
    return [f"{row['pct']:.1f} {row['name']}" for row in summary["self"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.writecost")
    parser.add_argument("revisions", nargs="+", help="commits to compare ('.' = working tree)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--profile", default="", help="directory for py-spy --gil stacks")
    parser.add_argument(
        "--only", choices=("one", "three"), default="", help="only one node, or only three"
    )
    args = parser.parse_args(argv)
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    spy_dir = Path(args.profile) if args.profile else None
    if spy_dir is not None:
        spy_dir.mkdir(parents=True, exist_ok=True)
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        for revision in args.revisions:
            flags = ServeFlags(revision="" if revision == "." else revision)
            targets: list[tuple[str, Callable[[], Target]]] = [
                ("one node", partial(CofferSingle, "inmem", flags)),
                ("3 nodes, active", partial(CofferCluster, 3, flags)),
            ]
            if args.only:
                wanted = {"one": "one node", "three": "3 nodes, active"}[args.only]
                targets = [t for t in targets if t[0] == wanted]
            for kind, make in targets:
                spy = None
                if spy_dir is not None:
                    spy = spy_dir / f"{revision.strip('.') or 'tree'}-{kind[0]}-{round_}.txt"
                record = measure(make, args.seconds, spy)
                rows.setdefault((revision, kind), []).append(record)
                print(json.dumps({"revision": revision, "target": kind, **record}), flush=True)
                if spy is not None and spy.exists():
                    print("  " + "\n  ".join(_top(spy)), flush=True)
    print("median CPU µs per write (serving process / whole target), writes/s:")
    for (revision, kind), records in rows.items():
        serving = statistics.median(r["serving_us"] for r in records)
        loop = statistics.median(r["loop_us"] for r in records)
        total = statistics.median(r["total_us"] for r in records)
        rate = statistics.median(r["writes_per_s"] for r in records)
        print(
            f"  {revision:>10} {kind:<16} {serving:>6.0f} / {total:>6.0f} µs"
            f"  loop {loop:>6.0f} µs  {rate:>6.0f}/s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
