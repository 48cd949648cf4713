"""Three real ``coffer server`` processes: the consistency headers and the
performance standby's staleness bound.

* Read-after-write on a performance standby: the state a write returns in
  ``X-Vault-Index`` makes a standby answer only once it has applied it.
* An index the cluster has not reached: a standby refuses it itself (412,
  ``fail``) or forwards it (``forward-active-node``), where the active node
  refuses it with its own index attached.
* A standby left without a leader (the active node and the other standby
  frozen with SIGSTOP) stops serving reads from its replica once its bound
  has passed: 503 "not caught up" and ``sys/health`` 474.
* A standby cut off by the firewall falls behind the cluster's commit
  index past its lag bound and stops too (needs iptables as root).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.servers import Cluster, Node, Reply, wait_until
from tests.cluster.test_ha_partition import iptables_usable, partitioned
from tests.conftest import require

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

#: Short enough for the test, long enough that an election never trips it.
BOUNDS = '  standby_read_max_leader_loss = "1s"\n  standby_read_max_lag = 1000\n'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path_factory.mktemp("consistency"), 3, extra_raft=BOUNDS)
    try:
        nodes.bootstrap()
        yield nodes
    finally:
        nodes.close()
    for node in nodes.nodes:
        assert "Traceback" not in node.log_text(), node.log_tail()


def _write(node: Node, cluster: Cluster, path: str, value: str) -> dict[str, str]:
    reply = node.request(
        "PUT", f"/v1/secret/data/{path}", {"data": {"v": value}}, token=cluster.root_token
    )
    assert reply.status == 200, reply
    return reply.headers


def _read(node: Node, cluster: Cluster, path: str, headers: dict[str, str]) -> Reply:
    token = cluster.root_token
    return node.request("GET", f"/v1/secret/data/{path}", token=token, headers=headers)


def test_writes_return_the_index_state_in_every_spelling(cluster: Cluster) -> None:
    headers = _write(cluster.active(), cluster, "state", "1")
    assert int(headers["x-coffer-index"]) > 0
    assert headers["x-vault-index"] == headers["x-service-index"] != ""


@pytest.mark.parametrize("spelling", ["X-Vault-Index", "X-Service-Index", "X-Coffer-Index"])
def test_read_after_write_on_a_performance_standby(cluster: Cluster, spelling: str) -> None:
    active = cluster.active()
    standbys = cluster.standbys()
    source = "x-coffer-index" if spelling == "X-Coffer-Index" else "x-vault-index"
    for round_ in range(10):
        standby = standbys[round_ % len(standbys)]
        state = _write(active, cluster, f"raw/{spelling}", str(round_))[source]
        got = _read(standby, cluster, f"raw/{spelling}", {spelling: state})
        assert got.status == 200, got
        assert got.json["data"]["data"] == {"v": str(round_)}
        assert "x-coffer-index" not in got.headers  # served from the standby's replica


def test_an_index_not_reached_is_refused_by_the_standby_itself(cluster: Cluster) -> None:
    active = cluster.active()
    ahead = str(int(_write(active, cluster, "ahead", "1")["x-coffer-index"]) + 10**6)
    standby = cluster.standbys()[0]
    for headers in ({}, {"X-Vault-Inconsistent": "fail"}, {"X-Service-Inconsistent": "fail"}):
        got = _read(standby, cluster, "ahead", {"X-Coffer-Index": ahead, **headers})
        assert got.status == 412, got
        assert got.errors == ["required index state not present"]
        assert "x-coffer-index" not in got.headers  # decided on the standby


def test_forward_active_node_sends_it_to_the_active_node(cluster: Cluster) -> None:
    active = cluster.active()
    ahead = str(int(_write(active, cluster, "ahead", "2")["x-coffer-index"]) + 10**6)
    standby = cluster.standbys()[0]
    headers = {"X-Coffer-Index": ahead, "X-Vault-Inconsistent": "forward-active-node"}
    got = _read(standby, cluster, "ahead", headers)
    # The active node has not reached it either: it refuses, telling how far it got.
    assert got.status == 412, got
    assert int(got.headers["x-coffer-index"]) < int(ahead)
    # A reachable index with the same header is simply served.
    state = _write(active, cluster, "ahead", "3")["x-vault-index"]
    headers = {"X-Vault-Index": state, "X-Vault-Inconsistent": "forward-active-node"}
    got = _read(standby, cluster, "ahead", headers)
    assert got.status == 200 and got.json["data"]["data"] == {"v": "3"}


def test_x_vault_forward_always_goes_to_the_active_node(cluster: Cluster) -> None:
    active = cluster.active()
    _write(active, cluster, "fwd", "1")
    standby = cluster.standbys()[0]
    got = _read(standby, cluster, "fwd", {"X-Vault-Forward": "active-node"})
    assert got.status == 200 and "x-coffer-index" in got.headers


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Vault-Index": "bm90IGEgc3RhdGU="},
        {"X-Vault-Index": "1", "X-Vault-Inconsistent": "sometimes"},
    ],
)
def test_bad_consistency_headers_are_a_400(cluster: Cluster, headers: dict[str, str]) -> None:
    got = _read(cluster.standbys()[0], cluster, "fwd", headers)
    assert got.status == 400, got
    assert got.errors


def test_a_standby_without_a_leader_stops_serving_its_replica(cluster: Cluster) -> None:
    active = cluster.active()
    lonely, other = cluster.standbys()
    _write(active, cluster, "frozen", "before")
    wait_until(
        lambda: _read(lonely, cluster, "frozen", {}).status == 200, 10, "the standby has the write"
    )
    assert lonely.health() == 473
    frozen = [active, other]
    try:
        for node in frozen:
            assert node.proc is not None
            os.kill(node.proc.pid, signal.SIGSTOP)

        def refused() -> Reply:
            got = _read(lonely, cluster, "frozen", {})
            assert got.status == 503, got
            return got

        got = wait_until(refused, 30, "the standby to stop serving its replica")
        (message,) = got.errors
        assert message.startswith("not caught up: no contact with the active node")
        assert lonely.health() == 474
        assert lonely.health("?perfstandbyok=true&haunhealthycode=299") == 299
        body = lonely.request("GET", "/v1/sys/health?haunhealthycode=200").json
        assert body["ha_connection_healthy"] is False
        assert body["last_request_forwarding_heartbeat_ms"] > 1000
    finally:
        for node in frozen:
            if node.proc is not None:
                os.kill(node.proc.pid, signal.SIGCONT)
    cluster.wait_roles(timeout=60)
    for node in cluster.nodes:
        wait_until(lambda n=node: _read(n, cluster, "frozen", {}).status == 200, 30, "serving")


def test_a_standby_that_fell_behind_stops_serving_its_replica(tmp_path: Path) -> None:
    """Cut off by the firewall (its API still reachable), with a leader-loss bound
    too long to matter: the lag bound alone stops its reads."""
    require(iptables_usable(), "iptables (as root) is needed to partition a node")
    bounds = '  standby_read_max_leader_loss = "10m"\n  standby_read_max_lag = 5\n'
    cluster = Cluster(tmp_path, 3, extra_raft=bounds)
    try:
        cluster.bootstrap()
        active = cluster.active()
        behind = cluster.standbys()[0]
        _write(active, cluster, "lag", "0")
        wait_until(lambda: _read(behind, cluster, "lag", {}).status == 200, 10, "replicated")
        with partitioned(behind.raft_ip):
            for n in range(1, 21):
                _write(active, cluster, "lag", str(n))

            def refused() -> Reply:
                got = _read(behind, cluster, "lag", {})
                assert got.status == 503, got
                return got

            (message,) = wait_until(refused, 30, "the lagging standby to stop").errors
            assert message.startswith("not caught up: ") and "entries behind" in message
            assert behind.health() == 473  # lagging, but within its leader-loss bound
        cluster.wait_roles(timeout=60)

        def serves_the_last_write() -> bool:
            got = _read(behind, cluster, "lag", {})
            assert got.status == 200, got
            return bool(got.json["data"]["data"] == {"v": "20"})

        wait_until(serves_the_last_write, 60, "caught up and serving again")
    finally:
        cluster.close()
