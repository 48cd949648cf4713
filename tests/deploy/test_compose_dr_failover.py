"""The replication compose (deploy/compose.replication.yaml): lose the primary site under
load, promote the DR secondary, lose nothing acknowledged before the lag bound.

Both sites come up through clusterctl's replication path (init, unseal, DR primary
enable, secondary token, secondary enable, unseal with the primary's keys, stream-wals);
the scenario kills the primary's three nodes at once, promotes the DR site with a batch
DR operation token made on the primary, and reads every key back through the DR site's
load balancer. ``down`` must leave no container, network or volume behind.
"""

from __future__ import annotations

import uuid
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from chaos.compose.dr_failover import LAG_BOUND, DrSettings, run_dr_failover
from deploy.clusterctl import http_request, wait_until
from deploy.replication_pair import ReplicationPair, replication_port_env
from tests.deploy.conftest import project_resources

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(1800)]


def test_losing_the_primary_site_loses_nothing_older_than_the_lag_bound(
    replication_images: dict[str, str], tmp_path: Path
) -> None:
    project = f"cofferdr{uuid.uuid4().hex[:10]}"
    env = {**replication_port_env(), **replication_images}
    pair = ReplicationPair(project=project, state_dir=tmp_path / "cluster", env=env)
    try:
        ready = pair.up(build=False)
        assert ready["state"] == "stream-wals", ready
        assert ready["known_primary_cluster_addrs"] == ["primary-repl:8203"], ready

        result = run_dr_failover(pair, DrSettings(warmup=12.0))
        print(result.summary())

        assert not result.error, result.error
        assert result.report.acknowledged > 100, "the load did not get going"
        assert result.losses.old == [], result.summary()
        assert result.losses.unread == [], result.summary()
        assert result.report.regressions == 0 and result.report.phantoms == 0, result.summary()
        assert result.lag_bound == LAG_BOUND
        assert result.lag.get("samples", 0) > 0, "no replication lag was measured"
        assert result.serving_after is not None, "the promoted site never took a write"

        # The promoted site is a DR primary, serving clients with the primary's token
        # (through its active node: the read backend takes a node after two checks).
        active = {"X-Vault-Forward": "active-node"}
        status = http_request(
            "GET", pair.dr.lb_url + "/v1/sys/replication/dr/status", headers=active
        )
        assert status.status == 200 and status.doc["data"]["mode"] == "primary", status.body
        read = http_request(
            "GET",
            pair.dr.lb_url + "/v1/chaos/data/after-failover",
            token=pair.primary.root_token,
            headers=active,
        )
        assert read.status == 200 and read.doc["data"]["data"] == {"v": 1}, read.body
    finally:
        pair.down()
        left = project_resources(project)
        assert not any(left.values()), f"compose project {project} left behind {left}"


def test_the_replication_address_follows_the_primarys_active_node(
    replication_images: dict[str, str], tmp_path: Path
) -> None:
    """Kill the primary's active node: ``primary-repl:8203`` (the primary's load balancer)
    now leads to the new active node, and the DR secondary streams from it."""
    project = f"cofferdr{uuid.uuid4().hex[:10]}"
    env = {**replication_port_env(), **replication_images}
    pair = ReplicationPair(project=project, state_dir=tmp_path / "cluster", env=env)
    try:
        pair.up(build=False)
        old = pair.primary.active_node()
        assert old is not None
        pair.primary.docker("kill", pair.primary.container(old))
        new = wait_until(partial(_another_active, pair, old), 60, "a new active node")
        root = pair.primary.root_token
        wait_until(partial(_wrote, pair, root), 60, "a write on the new active node")
        wal = int(pair.primary_status()["last_wal"])

        def caught_up() -> dict[str, Any] | None:
            status = pair.dr_status()
            if status.get("state") != "stream-wals":
                return None
            return status if int(status.get("last_remote_wal") or 0) >= wal else None

        status = wait_until(caught_up, 120, f"the DR secondary to stream from {new}")
        assert status["known_primary_cluster_addrs"] == ["primary-repl:8203"], status
    finally:
        pair.down()
        left = project_resources(project)
        assert not any(left.values()), f"compose project {project} left behind {left}"


def _another_active(pair: ReplicationPair, old: str) -> str | None:
    active = pair.primary.active_node()
    return active if active not in (None, old) else None


def _wrote(pair: ReplicationPair, token: str) -> bool:
    reply = http_request(
        "POST", pair.primary.lb_url + "/v1/secret/data/after", body={"data": {"v": 1}}, token=token
    )
    return reply.status == 200
