"""Measure the Raft backend on this machine (not a test; run by hand).

    .venv/bin/python -m tests.cluster.bench_raft latency   # strict vs relaxed
    .venv/bin/python -m tests.cluster.bench_raft failover  # pings on vs off
    .venv/bin/python -m tests.cluster.bench_raft snapshot  # 100k keys to a fresh node

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

from harness.ports import free_port
from harness.raft_cluster import Cluster, NodeProcess

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


def snapshot(count: int = 100_000, size: int = 100) -> None:
    """A fresh node added to a one-node cluster whose log was compacted: the time
    until it has applied everything (the leader streams it the dump)."""
    with tempfile.TemporaryDirectory() as root:
        cluster = Cluster(Path(root), size=1)
        cluster.start()
        joiner: NodeProcess | None = None
        try:
            leader = cluster.wait_for_leader()
            started = time.monotonic()
            target = leader.request("fill", count=count, size=size, wait=600)
            print(f"filled {count} keys of {size} B in {time.monotonic() - started:.1f}s")
            leader.request("compact")
            time.sleep(3)  # the dump is written by a thread; the journal is cut after it
            config = dict(leader.config)
            config.update(
                node_id="node-2",
                cluster_addr=f"127.0.0.1:{free_port()}",
                data_dir=str(Path(root) / "node-2"),
                peers={"node-1": leader.address},
            )
            joiner = NodeProcess("node-2", config, Path(root) / "node-2.log")
            joiner.start()
            started = time.monotonic()
            leader.request("add_peer", node_id="node-2", address=config["cluster_addr"], wait=120)
            joiner.request("wait_index", index=target, timeout=600, wait=620)
            print(f"snapshot install + catch-up: {time.monotonic() - started:.1f}s")
        finally:
            if joiner is not None:
                joiner.stop()
            cluster.close()


if __name__ == "__main__":
    {"latency": latency, "failover": failover, "snapshot": snapshot}[sys.argv[1]]()
