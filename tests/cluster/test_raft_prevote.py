"""PreVote, leader stickiness, CheckQuorum and the leader lease, with real processes.

A follower frozen with SIGSTOP, or cut off by the firewall, and then let back
must not depose the healthy leader: it asks for pre-votes, which the others
refuse while they hear from the leader, so no term is raised. A leader cut off
from its majority steps down by itself and loses its lease.

Each node's Raft traffic uses its own loopback address (127.0.13.n), so one
pair of iptables rules isolates exactly one node's Raft links; the harness
talks to the nodes over pipes.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.raft_cluster import Cluster, NodeProcess
from harness.wait import wait_until
from tests.cluster.test_ha_partition import iptables_usable, partitioned
from tests.conftest import require

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(180)]

HOSTS = ["127.0.13.1", "127.0.13.2", "127.0.13.3"]


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Any]:
    made: list[Cluster] = []

    def make(**overrides: Any) -> Cluster:
        cluster = Cluster(tmp_path, hosts=HOSTS, **overrides)
        made.append(cluster)
        cluster.start()
        return cluster

    yield make
    for cluster in made:
        cluster.close()


def terms(cluster: Cluster) -> list[int]:
    return [node.request("status")["term"] for node in cluster.live()]


def settle(cluster: Cluster) -> tuple[NodeProcess, list[int]]:
    leader = cluster.wait_for_leader()
    cluster.wait_converged()
    return leader, terms(cluster)


def rejoin_quietly(cluster: Cluster, follower: NodeProcess) -> None:
    """The follower knows the leader again and has everything it committed."""
    wait_until(lambda: follower.request("status")["leader"] is not None, 20, "a known leader")
    cluster.wait_converged()


def test_a_frozen_follower_does_not_depose_the_leader(make_cluster: Any) -> None:
    cluster = make_cluster()
    leader, before = settle(cluster)
    follower = cluster.followers(leader)[0]
    assert follower.proc is not None

    os.kill(follower.proc.pid, signal.SIGSTOP)
    try:
        leader.request("put", key="while-frozen", value="1")
        time.sleep(3)  # past the election timeout and the leader's connection timeout
    finally:
        os.kill(follower.proc.pid, signal.SIGCONT)
    rejoin_quietly(cluster, follower)

    assert terms(cluster) == before
    assert cluster.wait_for_leader() is leader


@pytest.mark.parametrize("pre_vote", [True, False], ids=["prevote", "control-without-prevote"])
def test_a_partitioned_follower_does_not_depose_the_leader_after_healing(
    make_cluster: Any, pre_vote: bool
) -> None:
    require(iptables_usable(), "iptables (as root) is needed to partition a node")
    cluster = make_cluster(pre_vote=pre_vote)
    leader, before = settle(cluster)
    follower = cluster.followers(leader)[0]

    with partitioned(follower.address.rsplit(":", 1)[0]):
        leader.request("put", key="while-cut-off", value="1")
        time.sleep(4)
        cut_off_term = follower.request("status")["term"]
    rejoin_quietly(cluster, follower)

    if pre_vote:
        assert cut_off_term == before[0], "pre-votes raise no term"
        assert terms(cluster) == before
        assert cluster.wait_for_leader() is leader
    else:  # what PreVote prevents: elections while cut off, then a deposed leader
        assert cut_off_term > before[0]
        assert min(terms(cluster)) > max(before)


def test_a_leader_cut_off_from_its_majority_steps_down_and_loses_its_lease(
    make_cluster: Any,
) -> None:
    require(iptables_usable(), "iptables (as root) is needed to partition a node")
    cluster = make_cluster()
    leader, before = settle(cluster)
    wait_until(lambda: leader.request("status")["has_lease"], 10, "the leader's lease")
    assert not any(node.request("status")["has_lease"] for node in cluster.followers(leader))

    with partitioned(leader.address.rsplit(":", 1)[0]):
        wait_until(lambda: not leader.request("status")["has_lease"], 10, "the lease to lapse")
        wait_until(
            lambda: leader.request("status")["state"] != "leader", 10, "the leader to step down"
        )
        others = cluster.followers(leader)
        wait_until(
            lambda: any(node.request("status")["state"] == "leader" for node in others),
            20,
            "a new leader on the majority side",
        )
    rejoin_quietly(cluster, leader)
    new = cluster.wait_for_leader()
    assert new is not leader
    assert (
        new.request("status")["has_lease"]
        or wait_until(lambda: new.request("status")["has_lease"], 10, "the new leader's lease")
        is None
    )
    assert min(terms(cluster)) > max(before)
