"""CPU per replicated write, per process: the active node and each follower.

    python -m bench.raft_cpu --seconds 5                     # c=32 and c=1
    python -m bench.raft_cpu --seconds 5 --profile /tmp/prof  # + py-spy --gil of
                                                              #   the leader and a follower
    python -m bench.raft_cpu --raft-only --seconds 5          # the consensus layer alone
    python -m bench.raft_cpu --seconds 8 --concurrency 32 --profile /tmp/p --main-thread
                                  # py-spy of the active node's event-loop thread alone

Three ``coffer server`` nodes on Raft (as ``bench.run``'s ``coffer-raft3``), KV v2
writes to the active node. The figure is each process's user+system CPU in the
measured window divided by the writes acknowledged in it: on a shared machine it
moves far less than throughput does (issue 16 compares these before and after).

``--raft-only`` measures the consensus layer without HTTP, barrier or engine:
three ``harness.raft_node`` processes with mutual TLS, ``workers`` concurrent
``RaftBackend.put`` calls of 100 random bytes on the leader.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.coffer_targets import CofferCluster
from bench.loadgen import run_load
from bench.process_stats import cpu_seconds, system_cpu_seconds, thread_cpu_seconds
from bench.profile_suite import RATE, _py_spy
from bench.profiling import summarise_collapsed
from bench.quiet import wait_for_quiet
from bench.workloads import workload

__all__ = ["main"]


async def _measure(
    target: CofferCluster, op: Any, concurrency: int, seconds: float, warmup: float
) -> dict[str, Any]:
    nodes = [target.active, *(n for n in target.nodes if n is not target.active)]
    pids = [n.proc.pid for n in nodes if n.proc is not None]
    await wait_for_quiet(target.pids(), 25.0, 30.0)
    edges: list[list[float]] = []
    kernel: list[list[float]] = []
    threads: list[tuple[float, float]] = []

    def take() -> None:
        edges.append([cpu_seconds(pid) for pid in pids])
        kernel.append([system_cpu_seconds(pid) for pid in pids])
        threads.append(thread_cpu_seconds(pids[0]))

    async def sampler() -> None:
        await asyncio.sleep(warmup)
        take()
        await asyncio.sleep(seconds)
        take()

    ep = target.endpoints("active")
    raft_before = _raft_metrics(ep.write, ep.token)
    result, _ = await asyncio.gather(
        run_load(op, concurrency=concurrency, seconds=seconds, warmup=warmup, pids=pids),
        sampler(),
    )
    raft = _raft_delta(raft_before, _raft_metrics(ep.write, ep.token))
    ops = max(result.ops, 1)
    per_write = [round(1e6 * (b - a) / ops) for a, b in zip(edges[0], edges[1], strict=True)]
    in_kernel = [round(1e6 * (b - a) / ops) for a, b in zip(kernel[0], kernel[1], strict=True)]
    return {
        "concurrency": concurrency,
        "writes_per_s": round(result.throughput),
        "p50_ms": round(result.latency.p50_ms, 2),
        "errors": result.errors,
        "cpu_us_per_write": {"leader": per_write[0], "followers": per_write[1:]},
        # Of that, in the kernel (system time): what fewer system calls could save.
        "system_us_per_write": {"leader": in_kernel[0], "followers": in_kernel[1:]},
        # The active node split: its event-loop (main) thread, and the rest (Raft).
        "leader_loop_us": round(1e6 * (threads[1][0] - threads[0][0]) / ops),
        "leader_other_threads_us": round(1e6 * (threads[1][1] - threads[0][1]) / ops),
        "cluster_us_per_write": sum(per_write),
        "other_cpu_pct": round(result.other_cpu_pct, 1),
        # The active node's own sys/metrics over the run (warm-up included): the
        # mean Raft round of an entry, the mean journal fsync, writes per entry.
        **raft,
    }


def _raft_metrics(url: str, token: str) -> dict[str, float]:
    """The active node's ``coffer_raft_*`` sums and counts (``sys/metrics``)."""
    request = urllib.request.Request(  # noqa: S310 - the bench's own loopback server
        f"{url}/v1/sys/metrics?format=prometheus", headers={"X-Vault-Token": token}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - http://127.0.0.x
        text = reply.read().decode()
    wanted = {
        "coffer_raft_commit_seconds_sum",
        "coffer_raft_commit_seconds_count",
        "coffer_raft_fsync_seconds_sum",
        "coffer_raft_fsync_seconds_count",
        "coffer_raft_entries_total",
        "coffer_raft_commands_total",
    }
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:
                values[sample.name] = sample.value
    return values


def _raft_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    def change(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    def mean_ms(name: str) -> float:
        count = change(f"{name}_count")
        return round(1e3 * change(f"{name}_sum") / count, 2) if count else 0.0

    entries = change("coffer_raft_entries_total")
    return {
        "raft_round_ms": mean_ms("coffer_raft_commit_seconds"),
        "fsync_ms": mean_ms("coffer_raft_fsync_seconds"),
        "writes_per_entry": round(change("coffer_raft_commands_total") / entries, 1)
        if entries
        else 0.0,
    }


def _raft_only(args: argparse.Namespace) -> None:
    import tempfile

    from harness.raft_cluster import Cluster

    with tempfile.TemporaryDirectory() as root:
        cluster = Cluster(Path(root), tls=True)
        cluster.start()
        try:
            leader = cluster.wait_for_leader()
            nodes = [leader, *cluster.followers(leader)]
            pids = [n.proc.pid for n in nodes if n.proc is not None]
            for workers in (int(c) for c in args.concurrency.split(",")):
                for profiled in (False, True) if args.profile else (False,):
                    prefix = f"w{workers}-{time.monotonic_ns()}"
                    leader.request("load_start", prefix=prefix, workers=workers)
                    time.sleep(args.warmup)
                    spies = {}
                    if profiled:
                        out = Path(args.profile) / f"raft-only-c{workers}"
                        out.mkdir(parents=True, exist_ok=True)
                        spies = {
                            name: _spy(pid, out / f"{name}.txt", args.seconds)
                            for name, pid in zip(("leader", "follower"), pids, strict=False)
                        }
                    before = [cpu_seconds(pid) for pid in pids]
                    began = time.monotonic()
                    time.sleep(args.seconds)
                    after = [cpu_seconds(pid) for pid in pids]
                    ended = time.monotonic()
                    report = leader.request("load_stop", prefix=prefix, wait=60)
                    acked = sum(1 for _, ack in report["timeline"] if began <= ack <= ended)
                    per = [
                        round(1e6 * (b - a) / max(acked, 1))
                        for a, b in zip(before, after, strict=True)
                    ]
                    record = {
                        "raft_only": True,
                        "workers": workers,
                        "profiled": profiled,
                        "writes_per_s": round(acked / (ended - began)),
                        "errors": report["errors"],
                        "cpu_us_per_write": {"leader": per[0], "followers": per[1:]},
                        "cluster_us_per_write": sum(per),
                    }
                    print(json.dumps(record), flush=True)
                    for name, spy in spies.items():
                        spy.wait(60)
                        _summarise(name, out)
        finally:
            cluster.close()


def _main_thread_only(lines: Iterable[str]) -> Iterator[str]:
    """py-spy ``--threads`` stacks of the main thread (the event loop), without the
    thread's own frame. Without ``--gil`` a thread waiting in ``epoll`` or for the
    GIL may still be sampled (``Runner.run`` self, resumption lines): read shares
    of named functions, not of the loop's own frame."""
    for line in lines:
        head, sep, rest = line.partition(";")
        if sep and head.startswith("thread") and "MainThread" in head:
            yield rest


def _summarise(name: str, out: Path) -> None:
    with (out / f"{name}.txt").open() as raw:
        lines: Iterable[str] = _main_thread_only(raw) if MAIN_THREAD else raw
        summary = summarise_collapsed(lines, RATE)
    (out / f"{name}.json").write_text(json.dumps(summary, indent=1))
    print(f"# {name}: {summary['samples']} samples; top self | inclusive", flush=True)
    for self_row, incl_row in zip(summary["self"][:14], summary["total"][:14], strict=False):
        print(
            f"  {self_row['pct']:5.1f} {self_row['name'][:72]:72} | "
            f"{incl_row['pct']:5.1f} {incl_row['name'][:72]}",
            flush=True,
        )


#: py-spy's GIL-holder mode (``--gil``); off: every thread that is not idle.
GIL_ONLY = True
#: Only the main thread's stacks (``--main-thread``: every thread sampled, ``--threads``).
MAIN_THREAD = False


def _spy(pid: int, out: Path, seconds: float) -> subprocess.Popen[bytes]:
    argv = [_py_spy(), "record", "-p", str(pid), "-r", str(RATE), "-f", "raw"]
    argv += ["--gil"] if GIL_ONLY else []
    argv += ["--threads"] if MAIN_THREAD else []
    argv += ["-d", str(int(seconds)), "-o", str(out)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.raft_cpu")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--concurrency", default="32,1")
    parser.add_argument("--profile", default="", help="directory for py-spy --gil profiles")
    parser.add_argument("--raft-only", action="store_true", help="RaftBackend alone, no HTTP")
    parser.add_argument("--all-threads", action="store_true", help="py-spy without --gil")
    parser.add_argument("--idle", type=float, default=0.0, help="first: seconds of no load")
    parser.add_argument(
        "--main-thread", action="store_true", help="profile the event-loop thread alone"
    )
    args = parser.parse_args(argv)
    global GIL_ONLY, MAIN_THREAD
    MAIN_THREAD = args.main_thread
    GIL_ONLY = not (args.all_threads or args.main_thread)
    if args.raft_only:
        _raft_only(args)
        return 0
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    target = CofferCluster(3)
    with target:
        ep = target.endpoints("active")
        load = workload("coffer", "kv2-write")
        asyncio.run(load.setup(ep))
        op = load.make_op(ep)
        if args.idle:
            nodes = [target.active, *(n for n in target.nodes if n is not target.active)]
            pids = [n.proc.pid for n in nodes if n.proc is not None]
            before = [cpu_seconds(pid) for pid in pids]
            time.sleep(args.idle)
            spent = [cpu_seconds(p) - b for p, b in zip(pids, before, strict=True)]
            idle = [round(100 * s / args.idle, 1) for s in spent]
            print(json.dumps({"idle_cpu_pct": {"leader": idle[0], "followers": idle[1:]}}))
        levels = [int(c) for c in args.concurrency.split(",")]
        for concurrency in levels:
            record = asyncio.run(_measure(target, op, concurrency, args.seconds, args.warmup))
            print(json.dumps(record), flush=True)
        if args.profile:
            out = Path(args.profile)
            out.mkdir(parents=True, exist_ok=True)
            follower = next(n for n in target.nodes if n is not target.active)
            who = {"leader": target.active, "follower": follower}
            spies = {}
            for name, node in who.items():
                assert node.proc is not None
                spies[name] = _spy(node.proc.pid, out / f"{name}.txt", args.seconds)
            time.sleep(0.3)
            # Profiled at the last concurrency measured.
            record = asyncio.run(_measure(target, op, levels[-1], args.seconds - 0.5, 0.0))
            print(json.dumps({"profiled": True, **record}), flush=True)
            for name, spy in spies.items():
                spy.wait(60)
                _summarise(name, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
