"""Joining through ``sys/storage/raft/join``, plain standbys, and a five-node cluster;
and the join endpoints as an unauthenticated caller sees them (issue 14, item 3)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from node.cluster.join import MAX_PER_SOURCE
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


def test_a_join_whose_answer_failed_can_be_made_again(tmp_path: Path) -> None:
    """Unsealing a joiner answers the leader's challenge; when that fails (here the
    leader is down) the join is abandoned, and the leader's seal config must go with
    it: kept, the node read as initialised with no data, skipped every later join
    and answered each unseal 500 "root key missing from storage" (a `make bench`
    five-node start hit it)."""
    cluster = Cluster(tmp_path, 2, retry_join=False)
    try:
        for node in cluster.nodes:
            node.start()
        first, second = cluster.nodes
        cluster.init(first)
        cluster.unseal(first)
        cluster.wait_active(first)
        join = {"leader_api_addr": first.api_addr}
        assert second.request("POST", "/v1/sys/storage/raft/join", join).json == {"joined": True}
        assert second.request("GET", "/v1/sys/init").json == {"initialized": True}
        first.stop()
        replies = [
            second.request("PUT", "/v1/sys/unseal", {"key": key})
            for key in cluster.keys[: cluster.threshold]
        ]
        assert replies[-1].status >= 400, replies[-1]  # the answer found no leader
        # Nothing of the abandoned join is left: uninitialised again, a 400 to a key.
        assert second.request("GET", "/v1/sys/init").json == {"initialized": False}
        again = second.request("PUT", "/v1/sys/unseal", {"key": cluster.keys[0]})
        assert again.status == 400, again
        # And it joins once the leader is back.
        first.start()
        cluster.unseal(first)
        cluster.wait_active(first)
        assert second.request("POST", "/v1/sys/storage/raft/join", join).json == {"joined": True}
        cluster.unseal(second)
        cluster.wait_roles()
        assert sorted(cluster.raft_members()) == sorted(n.name for n in cluster.nodes)
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

        def failure_tolerance() -> int:
            path = "/v1/sys/storage/raft/autopilot/state"
            tolerance: int = active.request("GET", path, token=token).json["data"][
                "failure_tolerance"
            ]
            return tolerance

        # Five voters tolerate two failures once autopilot counts every one healthy
        # (a node that joined last may still be catching up on a busy machine).
        wait_until(lambda: failure_tolerance() == 2, 30, "failure tolerance 2")
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


def _attacker_ca() -> str:
    """A well-formed self-signed CA certificate nobody in the cluster issued."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "attacker")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


_GARBAGE_CA = "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"
_CHALLENGE = "/v1/sys/storage/raft/bootstrap/challenge"


def test_unauthenticated_callers_cannot_stall_or_poison_joins(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, 2)
    try:
        for node in cluster.nodes:
            node.start()
        first, second = cluster.nodes
        # Unsealing a joiner whose retry_join has no leader yet says so.
        reply = second.request("PUT", "/v1/sys/unseal", {"key": "ab" * 33})
        assert reply.status == 400
        assert reply.json["errors"] == ["not joined: retry_join has not reached a leader"]
        reply = first.request("PUT", "/v1/sys/unseal", {"key": "ab" * 33})  # nothing to join
        assert reply.status == 400 and reply.json["errors"] == ["Coffer is not initialized"]

        cluster.init(first)
        cluster.unseal(first)
        cluster.wait_active(first)
        cluster.wait_initialized(second)  # it holds the leader's challenge now
        # Another address naming the joiner's server id cannot replace its nonce...
        steal = first.request(
            "PUT", _CHALLENGE, {"server_id": second.name}, source="127.0.0.2", timeout=30
        )
        assert steal.status == 400 and "already in progress" in steal.json["errors"][0]
        # ...nor take every challenge slot from one address.
        codes = [
            first.request(
                "PUT", _CHALLENGE, {"server_id": f"flood-{i}"}, source="127.0.0.2", timeout=30
            ).status
            for i in range(70)
        ]
        assert codes.count(200) == MAX_PER_SOURCE and set(codes[MAX_PER_SOURCE:]) == {429}
        other = first.request(
            "PUT", _CHALLENGE, {"server_id": "late-joiner"}, source="127.0.0.3", timeout=30
        )
        assert other.status == 200, other
        # The real joiner's answer still matches: it joins.
        cluster.unseal(second)
        cluster.wait_roles()

        # An initialised node takes nothing from a join: a certificate that does
        # not load is refused, a well-formed one changes nothing.
        for node in cluster.nodes:
            join = {"leader_api_addr": first.api_addr, "leader_ca_cert": _GARBAGE_CA}
            reply = node.request("POST", "/v1/sys/storage/raft/join", join)
            assert reply.status == 400 and "leader_ca_cert" in reply.json["errors"][0]
            join["leader_ca_cert"] = _attacker_ca()
            reply = node.request("POST", "/v1/sys/storage/raft/join", join)
            assert reply.status == 200 and reply.json == {"joined": True}
        # Forwarding from the standby still works.
        token = cluster.root_token
        for round_ in range(3):
            put = second.request(
                "PUT", "/v1/secret/data/ca", {"data": {"r": str(round_)}}, token=token
            )
            assert put.status == 200, put
            assert "x-coffer-index" in put.headers  # answered by the active node
    finally:
        cluster.close()
    for node in cluster.nodes:
        assert "Traceback" not in node.log_text(), node.log_tail()
