"""What Raft adds to the active node's CPU per write: a lone node against three.

    python -m bench.raft_share --slices 12 --seconds 3

A one-node ``inmem`` server and a three-node Raft cluster of the same tree run
side by side; slices of KV v2 writes at c=32 go to one, then the other (ABBA
order), so that the machine's drift falls on both alike: on the two-core
machines here a lone node's CPU per write moved by ±25 % between slices a
minute apart. Per slice:

- the lone node's process and the active node's loop thread, its other threads
  (the Raft engine) and its process, in µs of CPU per write;
- the context switches of each serving loop thread per write (voluntary: it
  slept; involuntary: the scheduler took its core while it could run);
- the share of the slice each serving process's loop thread and its other
  threads spent on a core, and runnable but waiting for one (``schedstat``).

At the end, the medians, and the paired differences between the active node
and the lone one: what Raft adds on the loop (submission, batching, the result
handed back) and on the whole process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from typing import Any

from bench.coffer_targets import CofferCluster, CofferSingle
from bench.loadgen import Op
from bench.loop_ab import CONCURRENCY, abba, measure_slice, paired_median, prepare, serving_pid
from bench.process_stats import context_switches, run_delays
from bench.targets import Target

__all__ = ["main"]


def _slice(target: Target, op: Op, seconds: float) -> dict[str, float]:
    """``bench.loop_ab``'s slice (CPU per write by thread), with the serving
    process's context switches and scheduling delays around the same load."""
    pid = serving_pid(target)
    switches, delays = context_switches(pid), run_delays(pid)
    record = measure_slice(target, op, seconds, CONCURRENCY)
    switches_after, delays_after = context_switches(pid), run_delays(pid)
    per = 1.0 / max(record["writes_per_s"] * seconds, 1.0)
    share = 100.0 / seconds
    return record | {
        # Shares of the slice's wall time: on a core, and runnable but waiting for one.
        "loop_running_pct": share * (delays_after[0][0] - delays[0][0]),
        "loop_waiting_pct": share * (delays_after[0][1] - delays[0][1]),
        "others_running_pct": share * (delays_after[1][0] - delays[1][0]),
        "others_waiting_pct": share * (delays_after[1][1] - delays[1][1]),
        "voluntary_per_write": per * (switches_after[0] - switches[0]),
        "involuntary_per_write": per * (switches_after[1] - switches[1]),
    }


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def _report(rows: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    one, three = rows["one"], rows["three"]
    keys = (
        "process_us",
        "loop_us",
        "other_threads_us",
        "writes_per_s",
        "loop_running_pct",
        "loop_waiting_pct",
        "others_running_pct",
        "others_waiting_pct",
    )
    summary: dict[str, Any] = {
        name: {key: round(_median(found, key)) for key in keys}
        | {
            key: round(_median(found, key), 2)
            for key in ("voluntary_per_write", "involuntary_per_write")
        }
        for name, found in rows.items()
    }
    # Slice i of one node ran next to slice i of three (ABBA): pair them.
    summary["raft_on_the_loop_us"] = round(paired_median(one, "process_us", three, "loop_us"))
    summary["raft_on_the_process_us"] = round(paired_median(one, "process_us", three, "process_us"))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.raft_share")
    parser.add_argument("--slices", type=int, default=12, help="slices per side")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    rows: dict[str, list[dict[str, float]]] = {"one": [], "three": []}
    with CofferSingle("inmem") as one, CofferCluster(3) as three:
        targets: dict[str, Target] = {"one": one, "three": three}
        ops = {name: prepare(target) for name, target in targets.items()}
        for index, name in abba(("one", "three"), args.slices):
            record = _slice(targets[name], ops[name], args.seconds)
            rows[name].append(record)
            print(json.dumps({"slice": index, "nodes": name} | record), flush=True)
    print(json.dumps(_report(rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
