"""A DR secondary's node whose first unseal cannot finish stays able to unseal.

After ``dr/secondary/enable`` the secondary's data is gone, so the first node to
unseal with the primary's keys writes the cluster record, which needs a Raft
quorum. A node unsealed alone cannot: it must answer 503 with ``errors`` (not
500) and take the keys again once its peers are unsealed. Before the fix its
barrier stayed open behind a "sealed" status that took no more shares (seen in
compose bring-ups: the node stayed sealed until restarted).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cluster import Cluster, Node
from harness.ports import free_port
from tests.replication.clusters import bootstrapped_pair, node_ok, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Cluster, Cluster]]:
    with bootstrapped_pair(tmp_path) as clusters:
        yield clusters


def _submit(node: Node, keys: list[str]) -> list[tuple[int, dict]]:  # type: ignore[type-arg]
    return [
        (r.status, r.json)
        for r in (node.request("PUT", "/v1/sys/unseal", {"key": k}, timeout=60) for k in keys)
    ]


def test_a_dr_node_unsealed_without_a_quorum_answers_503_and_unseals_later(
    pair: tuple[Cluster, Cluster],
) -> None:
    primary, secondary = pair
    root = primary.root_token
    active = primary.active()
    addr = f"127.0.0.1:{free_port()}"
    enable = {"primary_cluster_addr": addr}
    node_ok(active, "POST", "sys/replication/dr/primary/enable", enable, root)
    token = node_ok(active, "POST", "sys/replication/dr/primary/secondary-token", {"id": "s"}, root)
    node_ok(
        secondary.active(),
        "POST",
        "sys/replication/dr/secondary/enable",
        {"token": token["wrap_info"]["token"]},
        secondary.root_token,
    )
    for node in secondary.nodes:
        wait_until(lambda node=node: secondary.sealed(node), 60, f"{node.name} to seal")
    keys = primary.keys[: primary.threshold]
    lone, *rest = secondary.nodes

    (first, _), (status, doc) = _submit(lone, keys)
    assert first == 200
    assert status == 503, doc
    assert doc["errors"] and "stays sealed" in doc["errors"][0]
    assert secondary.sealed(lone)

    # One at a time: the lone node's Raft still counts toward a quorum. A 503 (an
    # election still running) asks for the keys again; a 500 never comes.
    def unsealed(node: Node) -> bool:
        answers = _submit(node, keys)
        if any(status not in (200, 503) for status, _ in answers):
            pytest.fail(f"{node.name}: {answers}")  # not retried, unlike an AssertionError
        status, doc = answers[-1]
        return status == 200 and doc["sealed"] is False

    for node in rest:
        wait_until(lambda node=node: unsealed(node), 60, f"{node.name} to unseal")

    # The lone node kept its Raft, so it may have won an election; sealed, it must
    # not stay leader (node/cluster/sealed_leader.py): an unsealed node leads.
    def an_unsealed_node_leads() -> bool:
        return any(node.request("GET", "/v1/sys/leader").json.get("is_self") for node in rest)

    wait_until(an_unsealed_node_leads, 30, "an unsealed node to lead")
    assert secondary.sealed(lone)
    # The lone node takes the keys again (before the fix: progress 0, sealed for good).
    wait_until(lambda: unsealed(lone), 60, f"{lone.name} to unseal")
    for node in secondary.nodes:
        assert not secondary.sealed(node)
