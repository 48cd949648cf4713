"""Three real ``coffer server`` processes on Raft: roles, forwarding, failover.

One cluster (bootstrapped through ``retry_join``) serves the module's tests, each of
which leaves it whole (all three nodes members, unsealed, serving): under
pytest-xdist's work stealing a worker may run them in any order. The one test that
cannot give its node back (remove-peer: a removed node never rejoins) has a cluster
of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.servers import Cluster, Node, bootstrapped, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with bootstrapped(
        tmp_path_factory.mktemp("ha"), 3, ("Traceback", "truncating already-applied")
    ) as nodes:
        yield nodes


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster for one test that leaves it changed for good."""
    with bootstrapped(tmp_path / "ha", 3, ("Traceback", "truncating already-applied")) as nodes:
        yield nodes


def write(node: Node, cluster: Cluster, path: str, data: dict[str, str], **kw: object) -> int:
    reply = node.request("PUT", f"/v1/secret/data/{path}", {"data": data}, token=cluster.root_token)
    return reply.status


def read(node: Node, cluster: Cluster, path: str) -> dict[str, str] | None:
    reply = node.request("GET", f"/v1/secret/data/{path}", token=cluster.root_token)
    if reply.status == 404:
        return None
    assert reply.status == 200, reply
    data: dict[str, str] = reply.json["data"]["data"]
    return data


def test_health_codes_and_query_overrides(cluster: Cluster) -> None:
    active = cluster.active()
    standbys = cluster.standbys()
    assert active.health() == 200
    for node in standbys:
        assert node.health() == 473
        assert node.health("?perfstandbyok=true") == 200
        assert node.health("?performancestandbycode=299") == 299
        body = node.request("GET", "/v1/sys/health").json
        assert body["standby"] is True and body["performance_standby"] is True
        assert body["removed_from_cluster"] is False
    body = active.request("GET", "/v1/sys/health").json
    assert body["standby"] is False and body["sealed"] is False


def test_leader_reports_the_active_node_everywhere(cluster: Cluster) -> None:
    active = cluster.active()
    for node in cluster.nodes:
        body = node.request("GET", "/v1/sys/leader").json
        assert body["ha_enabled"] is True
        assert body["is_self"] is (node is active)
        assert body["leader_address"] == active.api_addr
        assert body["leader_cluster_address"] == active.cluster_addr
        assert body["raft_committed_index"] > 0 and body["raft_applied_index"] > 0
    assert active.request("GET", "/v1/sys/leader").json["active_time"] != "0001-01-01T00:00:00Z"


def test_writes_through_every_node_and_read_your_writes(cluster: Cluster) -> None:
    for round_ in range(5):
        for node in cluster.nodes:
            key = f"ryw/{node.name}-{round_}"
            assert write(node, cluster, key, {"round": str(round_)}) == 200
            # Read back through the same node at once: a standby waited for the index.
            assert read(node, cluster, key) == {"round": str(round_)}
    for node in cluster.nodes:
        wait_until(lambda n=node: read(n, cluster, "ryw/node1-4") is not None, 5, "replication")


def test_standby_without_forwarding_redirects_to_the_active_node(cluster: Cluster) -> None:
    active = cluster.active()
    for node in cluster.standbys():
        for name in ("X-Service-No-Request-Forwarding", "X-Vault-No-Request-Forwarding"):
            reply = node.request(
                "PUT",
                "/v1/secret/data/redirected?x=1",
                {"data": {"a": "b"}},
                token=cluster.root_token,
                headers={name: "true"},
            )
            assert reply.status == 307, reply
            assert reply.headers["location"] == f"{active.api_addr}/v1/secret/data/redirected?x=1"


def test_forwarded_requests_keep_method_headers_and_body(cluster: Cluster) -> None:
    standby = cluster.standbys()[0]
    token = cluster.root_token
    reply = standby.request(
        "POST",
        "/v1/sys/mounts/fwd-kv",
        {"type": "kv", "options": {"version": "1"}},
        token=token,
    )
    assert reply.status == 204, reply
    # The mount exists on the standby at once (invalidation + read-your-writes).
    assert standby.request("PUT", "/v1/fwd-kv/a", {"v": "1"}, token=token).status == 204
    reply = standby.request("GET", "/v1/fwd-kv/a", token=token)
    assert reply.status == 200 and reply.json["data"] == {"v": "1"}
    assert "x-coffer-index" not in reply.headers  # served from the standby's replica
    reply = standby.request("LIST", "/v1/fwd-kv/", token=token)
    assert reply.json["data"]["keys"] == ["a"]
    reply = standby.request("DELETE", "/v1/fwd-kv/a", token=token)
    assert reply.status == 204
    assert standby.request("GET", "/v1/fwd-kv/a", token=token).status == 404


def test_policy_change_takes_effect_on_a_performance_standby(cluster: Cluster) -> None:
    active, standby = cluster.active(), cluster.standbys()[0]
    token = cluster.root_token
    assert write(active, cluster, "pol/a", {"k": "v"}) == 200
    deny = 'path "secret/data/pol/*" { capabilities = ["deny"] }'
    assert active.request("PUT", "/v1/sys/policy/p1", {"policy": deny}, token=token).status == 204
    created = active.request("POST", "/v1/auth/token/create", {"policies": ["p1"]}, token=token)
    user = created.json["auth"]["client_token"]
    wait_until(
        lambda: standby.request("GET", "/v1/auth/token/lookup-self", token=user).status == 200,
        5,
        "token replicated",
    )
    reply = standby.request("GET", "/v1/secret/data/pol/a", token=user)
    assert reply.status == 403 and "x-coffer-index" not in reply.headers
    allow = 'path "secret/data/pol/*" { capabilities = ["read"] }'
    assert active.request("PUT", "/v1/sys/policy/p1", {"policy": allow}, token=token).status == 204
    reply = wait_until(
        lambda: (
            (r := standby.request("GET", "/v1/secret/data/pol/a", token=user)).status == 200 and r
        ),
        3,
        "the new policy on the standby",
        every=0.02,
    )
    assert "x-coffer-index" not in reply.headers  # decided by the standby itself


def test_client_address_is_vouched_for_not_spoofed(cluster: Cluster) -> None:
    active, standby = cluster.active(), cluster.standbys()[0]
    token = cluster.root_token
    # The client connects from 127.0.0.2; the standby relays from 127.0.0.1.
    role = {"token_bound_cidrs": "127.0.0.2/32", "allowed_policies": "default"}
    assert active.request("POST", "/v1/auth/token/roles/local", role, token=token).status == 204
    made = active.request("POST", "/v1/auth/token/create/local", {"ttl": "1h"}, token=token)
    bound = made.json["auth"]["client_token"]
    # Forwarded by the standby, the active node sees the real client address.
    reply = standby.request(
        "POST", "/v1/auth/token/renew-self", {}, token=bound, source="127.0.0.2"
    )
    assert reply.status == 200, reply
    assert standby.request("POST", "/v1/auth/token/renew-self", {}, token=bound).status == 403
    # A client claiming the bound address with the forwarding headers is not believed.
    spoofed = active.request(
        "POST",
        "/v1/auth/token/renew-self",
        {},
        token=bound,
        headers={"X-Coffer-Forwarded-For": "127.0.0.2", "X-Coffer-Forwarded-Signature": "1.ab"},
    )
    assert spoofed.status == 403


def test_check_and_set_has_one_winner_across_nodes(cluster: Cluster) -> None:
    results: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(cluster.nodes) * 2)

    def race(node: Node, n: int) -> None:
        barrier.wait()
        reply = node.request(
            "PUT",
            "/v1/secret/data/cas-race",
            {"options": {"cas": 0}, "data": {"writer": f"{node.name}-{n}"}},
            token=cluster.root_token,
        )
        with lock:
            results.append(reply.status)

    threads = [
        threading.Thread(target=race, args=(node, n)) for node in cluster.nodes for n in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results).count(200) == 1, results


def test_keyring_rotation_reaches_every_node(cluster: Cluster) -> None:
    first, second = cluster.standbys()
    token = cluster.root_token
    before = first.request("GET", "/v1/sys/key-status", token=token).json["term"]
    assert first.request("POST", "/v1/sys/rotate", {}, token=token).status == 204
    assert write(first, cluster, "rotated", {"v": "new term"}) == 200
    # The other standby decrypts a value written under the new term from its replica.
    wait_until(lambda: read(second, cluster, "rotated") == {"v": "new term"}, 5, "new keyring")
    assert second.request("GET", "/v1/sys/key-status", token=token).json["term"] == before + 1


def test_tokens_expire_on_the_active_node_only(cluster: Cluster) -> None:
    active = cluster.active()
    token = cluster.root_token
    made = active.request("POST", "/v1/auth/token/create", {"ttl": "1s"}, token=token).json
    accessor = made["auth"]["accessor"]

    def revoked() -> bool:
        reply = active.request(
            "POST", "/v1/auth/token/lookup-accessor", {"accessor": accessor}, token=token
        )
        return reply.status >= 400

    wait_until(revoked, 10, "the expired token to be revoked")
    expired_in = [n.name for n in cluster.nodes if '"token.expired"' in n.log_text()]
    assert expired_in == [active.name]


def test_snapshot_download_and_restore(cluster: Cluster) -> None:
    active, standby = cluster.active(), cluster.standbys()[0]
    token = cluster.root_token
    assert write(active, cluster, "snap/kept", {"v": "before"}) == 200
    reply = standby.request("GET", "/v1/sys/storage/raft/snapshot", token=token)  # forwarded
    assert reply.status == 200 and reply.headers["content-type"] == "application/octet-stream"
    snapshot = reply.body
    assert write(active, cluster, "snap/kept", {"v": "after"}) == 200
    assert write(active, cluster, "snap/new", {"v": "new"}) == 200
    reply = standby.request("POST", "/v1/sys/storage/raft/snapshot", token=token, raw=snapshot)
    assert reply.status == 204, reply
    for node in cluster.nodes:
        wait_until(
            lambda n=node: read(n, cluster, "snap/kept") == {"v": "before"}, 5, "restored value"
        )
        assert read(node, cluster, "snap/new") is None
    reply = active.request("POST", "/v1/sys/storage/raft/snapshot", token=token, raw=b"junk")
    assert reply.status == 400


def test_autopilot_state_and_configuration(cluster: Cluster) -> None:
    active = cluster.active()
    token = cluster.root_token
    state = cluster.standbys()[0].request(
        "GET", "/v1/sys/storage/raft/autopilot/state", token=token
    )
    data = state.json["data"]
    assert data["healthy"] is True and data["failure_tolerance"] == 1
    assert data["leader"] == active.name
    assert sorted(data["servers"]) == ["node1", "node2", "node3"]
    config = active.request("GET", "/v1/sys/storage/raft/configuration", token=token).json
    servers = config["data"]["config"]["servers"]
    assert {s["node_id"]: s["leader"] for s in servers}[active.name] is True


def test_a_standby_refuses_anonymous_requests_without_relaying_them(cluster: Cluster) -> None:
    standby = cluster.standbys()[0]
    body = {"data": {"v": "x" * 100_000}}
    # With forwarding turned off a standby answers 307 for what it would relay, so a
    # 403 here was decided by the standby itself, before the body was relayed.
    local = {"X-Vault-No-Request-Forwarding": "true"}
    anonymous = standby.request("PUT", "/v1/secret/data/anon", body, headers=local)
    assert anonymous.status == 403, anonymous
    assert anonymous.json["errors"]
    # The control: an unknown token is the active node's to judge.
    unknown = standby.request(
        "PUT", "/v1/secret/data/anon", body, token="hvs.unknown", headers=local
    )
    assert unknown.status == 307, unknown
    # Logins stay open to anonymous callers through a standby.
    enabled = cluster.active().request(
        "POST", "/v1/sys/auth/anon-userpass", {"type": "userpass"}, token=cluster.root_token
    )
    assert enabled.status == 204, enabled
    wait_until(
        lambda: (
            standby.request("PUT", "/v1/auth/anon-userpass/login/nobody", {"password": "x"}).status
            == 400
        ),
        10,
        "an anonymous login relayed by the standby",
    )


def test_step_down_hands_the_active_role_to_another_node(cluster: Cluster) -> None:
    old = cluster.active()
    standby = cluster.standbys()[0]
    # Sent to a standby: it is forwarded to the active node, which gives up leadership.
    reply = standby.request("PUT", "/v1/sys/step-down", token=cluster.root_token)
    assert reply.status == 204, reply
    new = cluster.active(among=[n for n in cluster.nodes if n is not old], timeout=20)
    wait_until(lambda: old.health() == 473, 20, "the old active node as a standby")
    assert write(old, cluster, "after-step-down", {"v": "1"}) == 200
    assert read(new, cluster, "after-step-down") == {"v": "1"}


def test_kill_active_under_load_loses_no_acknowledged_write(cluster: Cluster) -> None:
    old = cluster.active()
    writers = cluster.standbys()
    acked: list[str] = []
    stop = threading.Event()
    killed_at: list[float] = []
    first_after_kill: list[float] = []
    lock = threading.Lock()

    def load(node: Node, worker: int) -> None:
        n = 0
        while not stop.is_set():
            key = f"load/{worker}-{n}"
            n += 1
            submitted = time.monotonic()
            try:
                status = write(node, cluster, key, {"n": str(n)})
            except OSError:
                continue
            if status == 200:
                with lock:
                    acked.append(key)
                    if killed_at and not first_after_kill and submitted > killed_at[0]:
                        first_after_kill.append(time.monotonic())

    threads = [
        threading.Thread(target=load, args=(node, i), daemon=True)
        for i, node in enumerate(writers * 2)
    ]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    killed_at.append(time.monotonic())
    old.kill()
    new = cluster.active(among=writers, timeout=20)
    elected = time.monotonic() - killed_at[0]
    time.sleep(2.0)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert first_after_kill, "no write was acknowledged after the failover"
    print(
        f"\nfailover: new active {new.name} reported healthy after {elected:.2f}s; "
        f"the first write submitted after kill -9 was acknowledged "
        f"{first_after_kill[0] - killed_at[0]:.2f}s after it; "
        f"{len(acked)} writes acknowledged"
    )
    missing = [key for key in acked if read(new, cluster, key) is None]
    assert not missing, f"{len(missing)} acknowledged writes lost: {missing[:5]}"

    # The killed node restarts from its data, is unsealed, catches up and serves.
    old.start()
    assert old.health() == 503
    cluster.unseal(old)
    wait_until(lambda: old.health() == 473, 20, "the restarted node as a standby")
    wait_until(lambda: read(old, cluster, acked[-1]) is not None, 10, "catch-up")
    assert write(old, cluster, "after-restart", {"v": "1"}) == 200
    assert read(old, cluster, "after-restart") == {"v": "1"}


def test_removed_peer_stops_serving(own_cluster: Cluster) -> None:
    cluster = own_cluster
    active = cluster.active()
    victim = cluster.standbys()[0]
    token = cluster.root_token
    assert write(active, cluster, "before-remove", {"v": "1"}) == 200
    reply = active.request(
        "POST", "/v1/sys/storage/raft/remove-peer", {"server_id": victim.name}, token=token
    )
    assert reply.status == 204, reply
    config = active.request("GET", "/v1/sys/storage/raft/configuration", token=token).json
    assert victim.name not in {s["node_id"] for s in config["data"]["config"]["servers"]}
    wait_until(lambda: victim.health() == 530, 15, "the removed node to notice")
    body = victim.request("GET", "/v1/sys/health").json
    assert body["removed_from_cluster"] is True and body["sealed"] is True
    assert victim.health("?removedcode=503") == 503
    assert victim.request("GET", "/v1/secret/data/before-remove", token=token).status == 503
    # The other two keep going.
    assert write(active, cluster, "after-remove", {"v": "1"}) == 200
    # A restart does not bring it back.
    victim.stop()
    victim.start()
    assert victim.health() == 530
    assert victim.request("PUT", "/v1/sys/unseal", {"key": cluster.keys[0]}).status == 200
    refused = victim.request("PUT", "/v1/sys/unseal", {"key": cluster.keys[1]})
    assert refused.status == 503 and "removed" in refused.json["errors"][0]
