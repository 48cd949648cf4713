"""Replication between two three-node clusters, across failovers on both sides.

The secondary's standbys seal themselves when its active node takes the
primary's keys, and every node is unsealed with the primary's keys; the
stream then reaches the secondary's standbys through its own Raft. Killing
the primary's active node moves the replication listener to the new active
node (the same loopback address), and killing the secondary's active node
moves the connection to the secondary's new active node, which resumes from
the position its Raft log holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.cluster import Cluster, Node
from harness.ports import free_port
from tests.replication.clusters import bootstrapped_pair, node_ok, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]


class Site(Cluster):
    def call(
        self, node: Node, method: str, path: str, body: object = None, token: str = ""
    ) -> object:
        return node.request(method, f"/v1/{path}", body, token=token or None)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Cluster, Cluster]]:
    with bootstrapped_pair(tmp_path) as clusters:
        yield clusters


def _read(node: Node, token: str, path: str) -> object:
    reply = node.request("GET", f"/v1/{path}", token=token)
    return reply.json["data"]["data"] if reply.status == 200 else None


def test_replication_follows_the_active_node_on_both_sides(
    pair: tuple[Cluster, Cluster],
) -> None:
    primary, secondary = pair
    root = primary.root_token
    active = primary.active()
    node_ok(
        active,
        "POST",
        "sys/policy/reader",
        {"policy": 'path "secret/*" { capabilities = ["read", "create", "update"] }'},
        root,
    )
    node_ok(active, "POST", "sys/auth/userpass", {"type": "userpass"}, root)
    ops = {"password": "pw", "policies": "reader"}
    node_ok(active, "POST", "auth/userpass/users/ops", ops, root)
    node_ok(active, "POST", "secret/data/one", {"data": {"v": "1"}}, root)
    node_ok(
        active,
        "POST",
        "sys/replication/performance/primary/enable",
        {"primary_cluster_addr": f"127.0.0.1:{free_port()}"},
        root,
    )
    token = node_ok(
        active, "POST", "sys/replication/performance/primary/secondary-token", {"id": "s"}, root
    )["wrap_info"]["token"]

    node_ok(
        secondary.active(),
        "POST",
        "sys/replication/performance/secondary/enable",
        {"token": token},
        secondary.root_token,
    )
    for node in secondary.nodes:
        wait_until(lambda node=node: secondary.sealed(node), 60, f"{node.name} to seal")
    secondary.keys, secondary.threshold = primary.keys, primary.threshold
    # Together: the first to unseal writes its cluster record, which needs a quorum.
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(secondary.unseal, secondary.nodes))
    # (its old root token is gone with its data: health, not the Raft configuration)
    wait_until(
        lambda: sorted(secondary.health().values()) == [200, 473, 473],
        60,
        "one active, two standbys",
    )

    def login() -> str:
        reply = secondary.active().request(
            "POST", "/v1/auth/userpass/login/ops", {"password": "pw"}
        )
        assert reply.status == 200, reply.body
        return str(reply.json["auth"]["client_token"])

    user = wait_until(login, 60, "a login on the secondary")
    for node in secondary.nodes:
        wait_until(
            lambda node=node: _read(node, user, "secret/data/one") == {"v": "1"},
            30,
            f"one on {node.name}",
        )

    # The primary's active node dies: another takes over, and its listener.
    active.kill()
    survivors = [n for n in primary.nodes if n is not active]
    new_active = primary.active(among=survivors, timeout=60)
    node_ok(new_active, "POST", "secret/data/two", {"data": {"v": "2"}}, root)
    for node in secondary.nodes:
        wait_until(
            lambda node=node: _read(node, user, "secret/data/two") == {"v": "2"},
            60,
            f"two on {node.name}",
        )

    # The secondary's active node dies: its new active node resumes.
    old = secondary.active()
    old.kill()
    rest = [n for n in secondary.nodes if n is not old]
    secondary.active(among=rest, timeout=60)
    node_ok(new_active, "POST", "secret/data/three", {"data": {"v": "3"}}, root)
    for node in rest:
        wait_until(
            lambda node=node: _read(node, user, "secret/data/three") == {"v": "3"},
            60,
            f"three on {node.name}",
        )
