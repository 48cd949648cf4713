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
from pathlib import Path

import pytest

from chaos.compose.dr_failover import LAG_BOUND, DrSettings, run_dr_failover
from deploy.clusterctl import http_request
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
