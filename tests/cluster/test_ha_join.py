"""Joining through ``sys/storage/raft/join``, plain standbys, and a five-node cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.servers import Cluster, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_join_endpoint_and_plain_standbys(tmp_path: Path) -> None:
    cluster = Cluster(
        tmp_path, 3, retry_join=False, extra_raft="  disable_performance_standby = true\n"
    )
    try:
        for node in cluster.nodes:
            node.start()
        first, second, third = cluster.nodes
        assert first.request("POST", "/v1/sys/storage/raft/join", {}).status == 400
        cluster.init(first)
        cluster.unseal(first)
        cluster.wait_active(first)
        # Before joining, a fresh node is uninitialised; non-voters are refused.
        assert second.request("GET", "/v1/sys/init").json == {"initialized": False}
        refused = second.request(
            "POST",
            "/v1/sys/storage/raft/join",
            {"leader_api_addr": first.api_addr, "non_voter": True},
        )
        assert refused.status == 400
        for node in (second, third):
            reply = node.request(
                "POST", "/v1/sys/storage/raft/join", {"leader_api_addr": first.api_addr}
            )
            assert reply.status == 200 and reply.json == {"joined": True}, reply
            status = node.request("GET", "/v1/sys/seal-status").json
            assert status["initialized"] and status["sealed"]
            assert (status["t"], status["n"]) == (2, 3)  # the leader's seal config
            cluster.unseal(node)
        cluster.wait_roles(standby_code=429)
        # An initialised node answers a join with true and stays where it is.
        again = second.request(
            "POST", "/v1/sys/storage/raft/join", {"leader_api_addr": first.api_addr}
        )
        assert again.json == {"joined": True}
        assert second.health("?standbyok=true") == 200
        assert second.health("?perfstandbyok=true") == 429
        body = second.request("GET", "/v1/sys/health").json
        assert body["standby"] is True and body["performance_standby"] is False
        # A plain standby forwards reads too: the reply carries the active node's index.
        token = cluster.root_token
        put = third.request("PUT", "/v1/secret/data/j", {"data": {"a": "1"}}, token=token)
        assert put.status == 200
        got = third.request("GET", "/v1/secret/data/j", token=token)
        assert got.status == 200 and "x-coffer-index" in got.headers
        assert got.json["data"]["data"] == {"a": "1"}
        assert third.request("GET", "/v1/sys/leader").json["performance_standby"] is False
    finally:
        cluster.close()


def test_five_node_cluster_comes_up(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, 5)
    try:
        cluster.bootstrap()
        active = cluster.active()
        token = cluster.root_token
        config = active.request("GET", "/v1/sys/storage/raft/configuration", token=token).json
        assert len(config["data"]["config"]["servers"]) == 5
        state = active.request("GET", "/v1/sys/storage/raft/autopilot/state", token=token).json
        assert state["data"]["failure_tolerance"] == 2
        for node in cluster.nodes:
            reply = node.request(
                "PUT", f"/v1/secret/data/{node.name}", {"data": {"n": node.name}}, token=token
            )
            assert reply.status == 200
        last = cluster.nodes[-1]
        wait_until(
            lambda: last.request("GET", "/v1/secret/data/node1", token=token).status == 200,
            5,
            "replication to node5",
        )
    finally:
        cluster.close()


def test_whole_cluster_restart_keeps_data(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, 3)
    try:
        cluster.bootstrap()
        token = cluster.root_token
        active = cluster.active()
        put = active.request("PUT", "/v1/secret/data/cold", {"data": {"a": "1"}}, token=token)
        assert put.status == 200
        for node in cluster.nodes:
            node.stop()
        for node in cluster.nodes:
            node.start()
            status = node.request("GET", "/v1/sys/seal-status").json
            assert status["initialized"] and status["sealed"]  # read from its own files
        for node in cluster.nodes:
            cluster.unseal(node)
        cluster.wait_roles()
        for node in cluster.nodes:
            got = node.request("GET", "/v1/secret/data/cold", token=token)
            assert got.status == 200 and got.json["data"]["data"] == {"a": "1"}
    finally:
        cluster.close()
