"""CI's compose scenario: kill -9 the active node's container under load, through HAProxy.

Every acknowledged write must survive, strong reads must never go back, the killed
node must come back (restarted, unsealed with the stored keys) as a Raft voter, and
HAProxy must send writes to the new active node.
"""

from __future__ import annotations

import pytest

from chaos.compose.scenarios import RunSettings, run_scenario
from deploy.clusterctl import NODES, ComposeCluster

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(1500)]


def test_kill_active_under_load_loses_no_acknowledged_write(
    compose_cluster: ComposeCluster,
) -> None:
    before = compose_cluster.active_node()
    assert before in NODES

    result = run_scenario(
        compose_cluster, "kill-active", RunSettings(duration=6.0, warmup=4.0, settle=4.0)
    )
    print(result.summary())

    report = result.report
    assert not result.error, result.error
    assert report.acknowledged > 100, "the load did not get going"
    assert report.lost == 0, report.summary()
    assert report.regressions == 0, report.summary()
    assert report.phantoms == 0 and report.divergent == 0, report.summary()
    assert result.first_write_after_fault is not None, "no write succeeded after the kill"
    assert result.nodes_back, result.raft_members
    assert sorted(result.raft_members) == sorted(NODES)
    killed = next(e["node"] for e in result.history.events if e["event"] == "kill")
    assert killed == before
    assert compose_cluster.health(killed) in (200, 473)
    assert compose_cluster.lb_active() == compose_cluster.active_node()
