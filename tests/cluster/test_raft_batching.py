"""Group commit across three real node processes: concurrent writes from the
leader and from a follower (whose entries pysyncobj forwards) share Raft
entries, every acknowledged write is on every node exactly once, and the
same holds after the leader is killed mid-load."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.raft_cluster import Cluster, NodeProcess, running

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running(tmp_path, forbidden=("CRITICAL",)) as nodes:
        yield nodes


def load(nodes: list[NodeProcess], seconds: float, workers: int) -> dict[str, int]:
    for node in nodes:
        node.request("load_start", prefix=node.name, workers=workers)
    time.sleep(seconds)
    acked: dict[str, int] = {}
    for node in nodes:
        report: dict[str, Any] = node.request("load_stop", prefix=node.name, wait=90)
        acked.update(report["acked"])
    return acked


def assert_exactly_the_acked_writes(cluster: Cluster, acked: dict[str, int]) -> None:
    cluster.wait_converged()
    for node in cluster.live():
        stored = node.request("keys", wait=60)
        loaded = {key: rev for key, rev in stored.items() if key in acked}
        assert loaded == acked, f"{node.name}: acknowledged writes missing or re-applied"


def test_concurrent_writes_share_entries_and_apply_once(cluster: Cluster) -> None:
    leader = cluster.wait_for_leader()
    follower = cluster.followers(leader)[0]
    first = leader.request("status")["commit_index"]

    acked = load([leader, follower], seconds=2.0, workers=16)

    entries = leader.request("status")["commit_index"] - first
    assert len(acked) > 100, "the load made progress"
    assert entries < len(acked) / 2, f"{entries} entries for {len(acked)} writes"
    assert len(set(acked.values())) == len(acked), "each write has its own revision"
    assert_exactly_the_acked_writes(cluster, acked)


def test_batched_writes_survive_a_leader_kill(cluster: Cluster) -> None:
    leader = cluster.wait_for_leader()
    followers = cluster.followers(leader)
    for node in followers:
        node.request("load_start", prefix=node.name, workers=16)
    time.sleep(1.0)
    leader.kill()
    cluster.wait_for_leader(timeout=30)
    time.sleep(1.5)
    acked: dict[str, int] = {}
    for node in followers:
        report = node.request("load_stop", prefix=node.name, wait=90)
        acked.update(report["acked"])

    assert len(acked) > 50
    assert_exactly_the_acked_writes(cluster, acked)
