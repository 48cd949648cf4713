"""Three RaftBackend processes on loopback: replication, failover, crashes.

Every node is a real subprocess (``harness.raft_node``) with its own data
directory; ``kill -9`` is SIGKILL, so no shutdown code runs. Writes come from
load generators running inside the nodes, which report exactly which writes
were acknowledged; after every disruption each acknowledged key must be
present on every live node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.raft_cluster import Cluster, NodeProcess, running
from harness.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(180)]


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    with running(tmp_path, **getattr(request, "param", {})) as nodes:
        yield nodes


def run_load(nodes: list[NodeProcess], seconds: float, workers: int = 4) -> dict[str, Any]:
    for node in nodes:
        node.request("load_start", prefix=node.name, workers=workers)
    time.sleep(seconds)
    return stop_load(nodes)


def stop_load(nodes: list[NodeProcess]) -> dict[str, Any]:
    merged: dict[str, Any] = {"acked": {}, "errors": 0, "timeline": []}
    for node in nodes:
        report = node.request("load_stop", prefix=node.name, wait=90)
        merged["acked"].update(report["acked"])
        merged["errors"] += report["errors"]
        merged["timeline"] += report["timeline"]
    return merged


def load_until(
    nodes: list[NodeProcess], done: Callable[[], bool], what: str, timeout: float = 60.0
) -> dict[str, Any]:
    """Write through ``nodes`` until ``done()``, not for a set time: concurrent writes
    share entries, and more of them do on a busy host, so a second of load can end
    before the log reaches a compaction point."""
    for node in nodes:
        node.request("load_start", prefix=node.name, workers=4)
    try:
        wait_until(done, timeout, what)
    finally:
        report = stop_load(nodes)
    return report


def compacted_past(leader: NodeProcess, index: int) -> Callable[[], bool]:
    """Whether ``leader``'s log starts at or after ``index``: a follower whose log
    ends before ``index`` can then catch up only from the leader's dump."""
    return lambda: leader.request("log_start") >= index


def assert_all_present(cluster: Cluster, acked: dict[str, int]) -> None:
    cluster.wait_converged()
    for node in cluster.live():
        stored = node.request("keys", wait=60)
        missing = sorted(key for key in acked if key not in stored)
        assert not missing, f"{node.name} lost {len(missing)} acknowledged writes: {missing[:5]}"
        changed = [key for key, revision in acked.items() if stored[key] != revision]
        assert not changed, f"{node.name}: revisions differ for {changed[:5]}"


def test_writes_through_any_node_and_read_your_writes(cluster: Cluster) -> None:
    leader = cluster.wait_for_leader()
    first, second = cluster.followers(leader)

    on_leader = leader.request("put", key="via/leader", value="L")
    on_follower = first.request("put", key="via/follower", value="F")

    assert on_follower > on_leader
    # Read-your-writes on *another* follower: wait for the write's index first.
    second.request("wait_index", index=on_follower, timeout=10)
    assert second.request("get", key="via/follower") == ["F", on_follower]
    assert second.request("get", key="via/leader") == ["L", on_leader]
    for node in cluster.nodes:
        status = node.request("status")
        assert status["leader_id"] == leader.name
        assert {peer["node_id"] for peer in status["peers"]} == {
            other.name for other in cluster.nodes if other is not node
        }
    report = run_load([first, second], seconds=1.0)
    assert report["errors"] == 0
    assert_all_present(cluster, report["acked"])


def test_leader_killed_under_load_loses_no_acknowledged_write(cluster: Cluster) -> None:
    leader = cluster.wait_for_leader()
    followers = cluster.followers(leader)
    for node in followers:
        node.request("load_start", prefix=node.name, workers=4)
    time.sleep(2.5)  # the follower-to-follower link idles past connection_timeout (2 s)

    killed_at = time.monotonic()
    leader.kill()
    successor = cluster.wait_for_leader()
    elected = time.monotonic() - killed_at
    time.sleep(1.5)
    report = stop_load(followers)

    resumed = min(ack for sent, ack in report["timeline"] if sent > killed_at) - killed_at
    print(
        f"\nfailover: new leader {successor.name} seen after {elected:.3f}s; first write "
        f"submitted after the kill acknowledged after {resumed:.3f}s; "
        f"{len(report['acked'])} writes acknowledged, {report['errors']} failed"
    )
    assert successor is not leader
    assert resumed < 5.0
    assert_all_present(cluster, report["acked"])

    leader.start()  # the old leader rejoins from its own data as a follower
    assert_all_present(cluster, report["acked"])


@pytest.mark.parametrize("cluster", [{"compaction_min_entries": 200}], indirect=True)
def test_killed_follower_restarts_from_its_data_and_catches_up(cluster: Cluster) -> None:
    leader = cluster.wait_for_leader()
    victim, other = cluster.followers(leader)
    before = run_load([other], seconds=0.5)

    victim.kill()
    down_at = leader.request("put", key="victim-down", value="1")  # past the victim's log
    during = load_until([leader, other], compacted_past(leader, down_at), "a compaction")
    assert leader.request("log_start") >= down_at, "the leader compacted past the victim"
    victim.start()

    assert_all_present(cluster, before["acked"] | during["acked"])
    assert "installed a snapshot" in victim.log_text(), "the leader had compacted past it"


@pytest.mark.parametrize(
    "cluster", [{"durability": "strict"}, {"durability": "relaxed"}], indirect=True
)
def test_whole_cluster_restart_keeps_every_acknowledged_write(cluster: Cluster) -> None:
    """kill -9 of every node at once (a process crash keeps the page cache, so
    even relaxed durability must not lose anything here; power loss would)."""
    leader = cluster.wait_for_leader()
    nodes = cluster.nodes
    for node in nodes:
        node.request("load_start", prefix=node.name, workers=3)
    time.sleep(1.0)
    # Snapshot what each node has had acknowledged so far, then crash them all
    # while the load is still running.
    acked: dict[str, int] = {}
    for node in nodes:
        acked.update(node.request("load_stop", prefix=node.name, wait=60)["acked"])
        node.request("load_start", prefix=node.name + "-tail", workers=3)
    for node in nodes:
        node.kill()
    assert leader not in cluster.live()

    cluster.start()
    cluster.wait_for_leader()
    assert_all_present(cluster, acked)
