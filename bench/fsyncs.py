"""Writes per second and fsyncs per write of one node on ``storage "file"``.

    python -m bench.fsyncs                       # this tree, KV v2 and v1 writes, c=1 and 32
    python -m bench.fsyncs --revision 567f341    # the server of an earlier commit

The same server, workloads and generator as ``bench.run``'s ``single`` step;
``perf stat`` (the kernel's ``syscalls:sys_enter_fsync``/``fdatasync``
tracepoints, every thread of the server) counts the fsyncs in the measured
window, which is what group commit changes. Prints one JSON line per run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
from typing import Any

from bench.coffer_targets import CofferSingle, ServeFlags
from bench.loadgen import run_load
from bench.quiet import wait_for_quiet
from bench.workloads import workload

__all__ = ["main"]

_EVENTS = ("syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync")


def _perf(pid: int) -> subprocess.Popen[str] | None:
    if shutil.which("perf") is None:
        return None
    return subprocess.Popen(
        ["perf", "stat", "-x", ",", "-e", ",".join(_EVENTS), "-p", str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop_perf(proc: subprocess.Popen[str] | None) -> int | None:
    """Total fsync + fdatasync calls counted, or None when perf could not count."""
    if proc is None:
        return None
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    total = 0
    for line in err.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in _EVENTS:
            if not fields[0].isdigit():
                return None  # "<not supported>" / "<not counted>"
            total += int(fields[0])
    return total


async def _measure(
    target: CofferSingle,
    name: str,
    concurrency: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    seconds, warmup = args.seconds, args.warmup
    ep = target.endpoints("node")
    load = workload(target.kind, name)
    await load.setup(ep)
    op = load.make_op(ep)
    await run_load(op, concurrency=concurrency, seconds=warmup, warmup=0, pids=target.pids())
    if args.quiet_timeout > 0:
        await wait_for_quiet(target.pids(), args.quiet_threshold, args.quiet_timeout)
    perf = _perf(target.node.proc.pid if target.node.proc else 0)
    await asyncio.sleep(0.2)  # perf attaches before the window opens
    result = await run_load(
        op, concurrency=concurrency, seconds=seconds, warmup=0, pids=target.pids()
    )
    fsyncs = _stop_perf(perf)
    return {
        "workload": name,
        "concurrency": concurrency,
        "ops": result.ops,
        "throughput": round(result.throughput, 1),
        "p50_ms": round(result.latency.p50_ms, 3),
        "p99_ms": round(result.latency.p99_ms, 3),
        "errors": result.errors,
        "server_cpu_pct": round(100 * result.server_cpu_s / seconds, 1),
        "other_cpu_pct": round(result.other_cpu_pct, 1),
        "fsyncs": fsyncs,
        "fsyncs_per_write": round(fsyncs / result.ops, 3)
        if fsyncs is not None and result.ops
        else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.fsyncs")
    parser.add_argument("--revision", default="", help="run the server of this commit")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--workloads", default="kv2-write,kv1-write")
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument(
        "--quiet-threshold", type=float, default=25.0, help="as bench.run: %% of a core"
    )
    parser.add_argument("--quiet-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    flags = ServeFlags(revision=args.revision)
    target = CofferSingle("file", flags)
    with target:
        for name in args.workloads.split(","):
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                record = asyncio.run(_measure(target, name, concurrency, args))
                record["code"] = flags.label
                print(json.dumps(record, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
