"""When a performance standby stops serving local reads, and what ``sys/health`` says."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from node.cluster.role import HAState
from node.cluster.staleness import StalenessBounds, stale_now, stale_reason
from node.cluster.watch import Watcher
from node.config import ConfigError, load_config
from node.core.health import NodeRole, parse_health_query

if TYPE_CHECKING:
    from node.cluster.cluster import Cluster as ClusterType

BOUNDS = StalenessBounds(max_leader_loss=1.0, max_lag=100)


def test_leader_loss_is_counted_to_the_moment_of_the_request() -> None:
    """Before the watcher has ticked after a freeze, its reason is still empty:
    reads and ``sys/health`` (both through ``Cluster.state``) count the loss now."""
    bounds = StalenessBounds()
    assert stale_now(bounds, ticked="", leader_lost_for=0.2) == ""
    frozen = stale_now(bounds, ticked="", leader_lost_for=15)
    assert frozen == "no contact with the active node for 15.0s"
    told = stale_now(bounds, ticked="9 entries behind the active node", leader_lost_for=15)
    assert told == "9 entries behind the active node"
    # What health reports follows the same reason: unhealthy (474) on a lost leader.
    state = HAState(ha_enabled=True, sealed=False, performance_standby=True, stale=frozen)
    assert not state.ha_healthy


def test_a_standby_in_touch_and_close_behind_serves() -> None:
    assert stale_reason(BOUNDS, leader_lost_for=0.0, leader_commit=500, applied=500) == ""
    assert stale_reason(BOUNDS, leader_lost_for=1.0, leader_commit=500, applied=400) == ""


def test_losing_the_leader_past_the_bound_makes_it_stale() -> None:
    reason = stale_reason(BOUNDS, leader_lost_for=1.01, leader_commit=0, applied=0)
    assert reason.startswith("no contact with the active node")


def test_lagging_past_the_bound_makes_it_stale() -> None:
    reason = stale_reason(BOUNDS, leader_lost_for=0.0, leader_commit=9234, applied=5354)
    assert reason == "3880 entries behind the active node"
    assert stale_reason(BOUNDS, leader_lost_for=0.0, leader_commit=501, applied=400) != ""


def test_a_replica_ahead_of_the_learned_commit_is_not_stale() -> None:
    # The learned commit index is a lower bound; a replica may be past it.
    assert stale_reason(BOUNDS, leader_lost_for=0.0, leader_commit=10, applied=50) == ""


def test_a_zero_lag_bound_allows_only_an_exact_replica() -> None:
    strict = StalenessBounds(max_leader_loss=0.0, max_lag=0)
    assert stale_reason(strict, leader_lost_for=0.0, leader_commit=7, applied=7) == ""
    assert stale_reason(strict, leader_lost_for=0.0, leader_commit=8, applied=7) != ""


def _state(stale: str) -> HAState:
    return HAState(ha_enabled=True, sealed=False, performance_standby=True, stale=stale)


def test_health_is_474_for_a_standby_that_lost_the_leader() -> None:
    lost = _state(stale_reason(BOUNDS, leader_lost_for=3.0, leader_commit=0, applied=0))
    assert not lost.ha_healthy
    role = NodeRole.of(lost, initialized=True)
    assert parse_health_query({}).status_for(role) == 474
    # standbyok/perfstandbyok do not hide it (as in the reference); the code is adjustable.
    assert parse_health_query({"perfstandbyok": "true", "standbyok": "1"}).status_for(role) == 474
    assert parse_health_query({"haunhealthycode": "299"}).status_for(role) == 299


def test_health_is_473_for_a_lagging_standby_that_still_has_its_leader() -> None:
    lagging = _state(stale_reason(BOUNDS, leader_lost_for=0.0, leader_commit=999, applied=0))
    assert lagging.stale and lagging.ha_healthy
    assert parse_health_query({}).status_for(NodeRole.of(lagging, initialized=True)) == 473


def test_the_active_node_is_never_ha_unhealthy() -> None:
    active = HAState(ha_enabled=True, sealed=False, active=True, stale="no contact with x")
    assert active.ha_healthy


def _raft(tmp_path: Path, lines: str) -> dict[str, object]:
    config = tmp_path / "c.hcl"
    config.write_text(
        'listener "tcp" {\n  tls_disable = true\n}\n'
        f'storage "raft" {{\n  path = "/r"\n{lines}}}\n'
    )
    return dict(load_config([str(config)]).storage.options)


@pytest.mark.parametrize(
    ("raw", "seconds"), [('"500ms"', 0.5), ('"1.5s"', 1.5), ("2", 2.0), ('"1m30s"', 90.0)]
)
def test_the_bounds_are_configured_in_the_raft_stanza(
    tmp_path: Path, raw: str, seconds: float
) -> None:
    options = _raft(
        tmp_path, f"  standby_read_max_leader_loss = {raw}\n  standby_read_max_lag = 250\n"
    )
    assert options["standby_read_max_leader_loss"] == seconds
    assert options["standby_read_max_lag"] == 250


@pytest.mark.parametrize(
    "line",
    [
        'standby_read_max_leader_loss = "soon"',
        'standby_read_max_leader_loss = "-1s"',
        "standby_read_max_lag = -1",
        'standby_read_max_lag = "many"',
    ],
)
def test_bad_bounds_name_the_key(tmp_path: Path, line: str) -> None:
    with pytest.raises(ConfigError, match=line.split(" ")[0]):
        _raft(tmp_path, f"  {line}\n")


class _Settings:
    staleness = BOUNDS


class _Cluster:
    settings = _Settings()


def _watcher() -> Watcher:
    return Watcher(cast("ClusterType", _Cluster()))


def test_the_watcher_takes_the_highest_commit_it_learned() -> None:
    watcher = _watcher()
    watcher._observe(10.0, True, False, 300, 300)
    assert watcher.stale == "" and watcher.leader_commit == 300
    watcher.leader_commit = 5000  # learned from the active node's sys/leader
    watcher._observe(10.1, True, False, 300, 300)
    assert watcher.stale == "4700 entries behind the active node"
    # Its own log never lowers what it learned; catching up clears it.
    watcher._observe(10.2, True, False, 4950, 4950)
    assert watcher.leader_commit == 5000 and watcher.stale == ""


def test_the_watcher_counts_leader_loss_from_the_last_contact() -> None:
    watcher = _watcher()
    watcher._observe(10.0, True, False, 0, 0)
    watcher._observe(10.9, False, False, 0, 0)
    assert watcher.stale == ""
    watcher._observe(11.2, False, False, 0, 0)
    assert watcher.stale == "no contact with the active node for 1.2s"
    watcher._observe(11.3, True, False, 0, 0)
    assert watcher.stale == ""
    # The leader itself is never stale.
    watcher._observe(20.0, False, True, 1, 0)
    assert watcher.stale == ""


class _SyncingCluster(_Cluster):
    """A cluster whose marker write completes when the test says so."""

    def __init__(self) -> None:
        self.marker_applied = asyncio.Event()
        self.sync_points = 0

    async def sync_point(self) -> None:
        self.sync_points += 1
        await self.marker_applied.wait()


async def test_after_losing_the_leader_local_reads_wait_for_a_new_marker_write() -> None:
    cluster = _SyncingCluster()
    watcher = Watcher(cast("ClusterType", cluster))
    watcher.caught_up = True
    watcher._observe(10.0, True, False, 100, 100)
    assert watcher.caught_up
    # Cut off past the bound: no longer caught up, and a marker write is under way.
    watcher._observe(11.5, False, False, 100, 100)
    assert not watcher.caught_up
    await asyncio.sleep(0)
    assert cluster.sync_points == 1
    # Back in touch and within the lag bound, it still waits for the marker.
    watcher._observe(12.0, True, False, 100, 100)
    assert watcher.stale == "" and not watcher.caught_up
    watcher._observe(13.5, False, False, 100, 100)  # a second loss starts no second one
    await asyncio.sleep(0)
    assert cluster.sync_points == 1
    cluster.marker_applied.set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert watcher.caught_up
    await watcher.stop()


async def test_a_node_that_did_not_run_past_the_bound_waits_for_a_new_marker_write() -> None:
    """A freeze (SIGSTOP) or starvation: the leader is in touch again at once, but
    the replica is as old as the pause; local reads wait for a marker write."""
    cluster = _SyncingCluster()
    watcher = Watcher(cast("ClusterType", cluster))
    watcher.caught_up = True
    watcher._resumed(15.0)
    assert not watcher.caught_up
    watcher._resumed(3.0)  # a second pause before the marker starts no second one
    await asyncio.sleep(0)
    assert cluster.sync_points == 1
    cluster.marker_applied.set()
    for _ in range(3):
        await asyncio.sleep(0)
    assert watcher.caught_up
    await watcher.stop()
