"""Measure the Raft backend on this machine (not a test; run by hand).

    .venv/bin/python -m tests.cluster.bench_raft latency   # strict vs relaxed
    .venv/bin/python -m tests.cluster.bench_raft failover  # pings on vs off

Three node processes on loopback, as in the cluster tests. Latency runs
write fresh ~40-byte values for a few seconds per case; failover kills the
leader under load from both followers and reports the time until the first
write *submitted after the kill* is acknowledged.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.cluster.harness import Cluster, NodeProcess

SECONDS = 3.0
IDLE_LINKS = 3.0  # > the harness's connection_timeout (2 s)


def run(node: NodeProcess, workers: int) -> str:
    prefix = f"bench-{workers}-{time.monotonic_ns()}"
    node.request("load_start", prefix=prefix, workers=workers)
    time.sleep(SECONDS)
    report = node.request("load_stop", prefix=prefix, wait=60)
    latencies = sorted(ack - sent for sent, ack in report["timeline"])
    if not latencies:
        return "no writes acknowledged"
    p50 = latencies[len(latencies) // 2] * 1e3
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3
    rate = len(latencies) / SECONDS
    return f"{rate:7.0f} writes/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  errors {report['errors']}"


def latency() -> None:
    for durability in ("strict", "relaxed"):
        with tempfile.TemporaryDirectory() as root:
            cluster = Cluster(Path(root), durability=durability)
            cluster.start()
            try:
                leader = cluster.wait_for_leader()
                follower = cluster.followers(leader)[0]
                for where, node in (("leader", leader), ("follower", follower)):
                    for workers in (1, 16, 64):
                        print(f"{durability:8} {where:8} window {workers:3}: {run(node, workers)}")
            finally:
                cluster.close()


def failover_trial(root: Path, **overrides: Any) -> tuple[float, float]:
    cluster = Cluster(root, **overrides)
    cluster.start()
    try:
        leader = cluster.wait_for_leader()
        followers = cluster.followers(leader)
        for node in followers:
            node.request("load_start", prefix=node.name, workers=4)
        time.sleep(IDLE_LINKS)  # follower-to-follower links idle past connection_timeout
        killed = time.monotonic()
        leader.kill()
        cluster.wait_for_leader(timeout=30)
        elected = time.monotonic() - killed
        time.sleep(2.0)
        timeline = [
            t
            for node in followers
            for t in node.request("load_stop", prefix=node.name, wait=60)["timeline"]
        ]
        resumed = min(ack for sent, ack in timeline if sent > killed) - killed
        return elected, resumed
    finally:
        cluster.close()


def failover(trials: int = 8) -> None:
    for label, overrides in (("pings on ", {}), ("pings off", {"ping_interval": 0})):
        results = []
        for _ in range(trials):
            with tempfile.TemporaryDirectory() as root:
                results.append(failover_trial(Path(root), **overrides))
        elected = [r[0] for r in results]
        resumed = [r[1] for r in results]
        print(
            f"{label}: election median {statistics.median(elected):.2f}s "
            f"({min(elected):.2f}-{max(elected):.2f}); first new write median "
            f"{statistics.median(resumed):.2f}s ({min(resumed):.2f}-{max(resumed):.2f})"
        )


if __name__ == "__main__":
    {"latency": latency, "failover": failover}[sys.argv[1]]()
