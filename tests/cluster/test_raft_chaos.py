"""Chaos scenarios at process level (issue 13): faults under load, then healing.

Three ``harness.raft_node`` processes, each with its Raft traffic on its own loopback
address (127.0.14.n), writers running inside the majority's nodes. Each
scenario asserts what must hold whatever the timing: no acknowledged write is
lost, the leader elected during the fault (or the original one) is still the
leader, in the same term, once the fault has healed, and every node catches
up. The longest gap between acknowledged writes is printed, not asserted (it
is a measurement; the full-length runs belong in docs/chaos.md).
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.raft_cluster import Cluster, NodeProcess, running
from tests.cluster.test_ha_partition import iptables_usable, partitioned
from tests.cluster.test_raft_backend_cluster import assert_all_present, stop_load
from tests.conftest import require

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(300)]

HOSTS = ["127.0.14.1", "127.0.14.2", "127.0.14.3"]


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    with running(tmp_path, hosts=HOSTS, **getattr(request, "param", {})) as nodes:
        yield nodes


def ip(node: NodeProcess) -> str:
    return node.address.rsplit(":", 1)[0]


def leadership(nodes: list[NodeProcess]) -> tuple[str | None, set[int]]:
    """The leader the given nodes agree on (None if they do not) and their terms."""
    statuses = [node.request("status") for node in nodes]
    leaders = {status["leader"] for status in statuses}
    return (leaders.pop() if len(leaders) == 1 else None), {s["term"] for s in statuses}


def wait_for_leader_among(nodes: list[NodeProcess], timeout: float = 20) -> NodeProcess:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for node in nodes:
            if node.request("status")["state"] == "leader":
                return node
        time.sleep(0.05)
    raise AssertionError("no leader among the majority")


def start_load(nodes: list[NodeProcess]) -> None:
    for node in nodes:
        node.request("load_start", prefix=node.name, workers=4)


def longest_gap(report: dict[str, Any], since: float) -> float:
    acks = sorted(ack for _, ack in report["timeline"] if ack >= since)
    return max((b - a for a, b in itertools.pairwise(acks)), default=0.0)


def settled_after_healing(cluster: Cluster, leader: NodeProcess, seconds: float = 4) -> None:
    """The same leader in the same term on every node, before and after ``seconds``."""
    cluster.wait_converged()
    before = leadership(cluster.live())
    time.sleep(seconds)
    after = leadership(cluster.live())
    assert before == after == (leader.address, after[1]), (before, after)
    assert len(after[1]) == 1, f"terms differ: {after[1]}"


@pytest.fixture
def firewall() -> None:
    require(iptables_usable(), "iptables (as root) is needed to partition a node")


def test_partition_of_the_leader(cluster: Cluster, firewall: None) -> None:
    old = cluster.wait_for_leader()
    majority = cluster.followers(old)
    start_load(majority)
    time.sleep(1)
    cut = time.monotonic()
    with partitioned(ip(old)):
        new = wait_for_leader_among(majority)
        time.sleep(8)
    settled_after_healing(cluster, new)  # the writers keep going through the healing
    report = stop_load(majority)
    print(f"\nleader partition: longest write gap {longest_gap(report, cut):.2f}s")
    assert_all_present(cluster, report["acked"])


@pytest.mark.parametrize("cluster", [{"compaction_min_entries": 500}], indirect=True)
def test_partition_of_a_follower_past_compaction(cluster: Cluster, firewall: None) -> None:
    leader = cluster.wait_for_leader()
    follower = cluster.followers(leader)[0]
    start_load([leader])
    cut = time.monotonic()
    with partitioned(ip(follower)):
        time.sleep(12)
        leader.request("compact")
        time.sleep(2)
    settled_after_healing(cluster, leader)
    report = stop_load([leader])
    print(f"\nfollower partition: longest write gap {longest_gap(report, cut):.2f}s")
    assert_all_present(cluster, report["acked"])


def test_a_flapping_follower_link(cluster: Cluster, firewall: None) -> None:
    leader = cluster.wait_for_leader()
    follower = cluster.followers(leader)[0]
    start_load([leader])
    cut = time.monotonic()
    for _ in range(8):  # 1 s down, 1 s up
        with partitioned(ip(follower)):
            time.sleep(1)
        time.sleep(1)
    settled_after_healing(cluster, leader)
    report = stop_load([leader])
    print(f"\nflapping link: longest write gap {longest_gap(report, cut):.2f}s")
    assert_all_present(cluster, report["acked"])


def test_a_frozen_leader(cluster: Cluster) -> None:
    old = cluster.wait_for_leader()
    majority = cluster.followers(old)
    assert old.proc is not None
    start_load(majority)
    time.sleep(1)
    cut = time.monotonic()
    os.kill(old.proc.pid, signal.SIGSTOP)
    try:
        new = wait_for_leader_among(majority)
        time.sleep(3)
    finally:
        os.kill(old.proc.pid, signal.SIGCONT)
    # Woken up, the old leader learns the newer term from the first reply and steps down.
    settled_after_healing(cluster, new)
    report = stop_load(majority)
    print(f"\nfrozen leader: longest write gap {longest_gap(report, cut):.2f}s")
    assert_all_present(cluster, report["acked"])


@pytest.mark.parametrize("cluster", [{"compaction_min_entries": 500}], indirect=True)
def test_a_follower_restarted_after_the_log_moved_on(cluster: Cluster) -> None:
    leader = cluster.wait_for_leader()
    follower = cluster.followers(leader)[0]
    follower.kill()
    start_load([leader])
    time.sleep(6)
    leader.request("compact")
    time.sleep(2)
    follower.start()
    settled_after_healing(cluster, leader)
    report = stop_load([leader])
    assert_all_present(cluster, report["acked"])
