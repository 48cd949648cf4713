"""A three-node Raft cluster under ``seal "pkcs11"``: nobody types a key, ever.

Every node shares one SoftHSM2 token (one ``SOFTHSM2_CONF``, as a mounted token
directory would be shared). Node 1 is initialised with recovery keys and
unseals itself; the others ``retry_join`` it and unseal themselves from the
encrypted root key the leader hands out; after ``kill -9`` of every node, all
three come back unsealed and serving with no unseal call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.servers import Cluster, Node
from tests.hsm.softhsm import SoftHsm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def hsm_cluster(base: Path, seal_stanza: str, size: int = 3) -> Cluster:
    class HsmNode(Node):
        def config_text(self) -> str:
            return super().config_text() + seal_stanza

    class HsmCluster(Cluster):
        node_type = HsmNode

    return HsmCluster(base, size)


def test_every_node_unseals_itself_after_kill_9(softhsm: SoftHsm, tmp_path: Path) -> None:
    cluster = hsm_cluster(tmp_path / "cluster", softhsm.stanza(softhsm.init_token()))
    try:
        first, *others = cluster.nodes
        # The first node alone makes the key (generate_key): the others find it.
        first.start()
        init = first.request("PUT", "/v1/sys/init", {"recovery_shares": 3, "recovery_threshold": 2})
        assert init.status == 200, init
        root = init.json["root_token"]
        cluster.wait_active(first)
        for node in others:
            node.start()
        cluster.wait_roles(timeout=90)
        for node in cluster.nodes:
            status = node.request("GET", "/v1/sys/seal-status").json
            assert (status["type"], status["sealed"], status["t"], status["n"]) == (
                "pkcs11",
                False,
                2,
                3,
            )
        active = cluster.active()
        mounted = active.request(
            "POST", "/v1/sys/mounts/kv", {"type": "kv", "options": {"version": "2"}}, token=root
        )
        assert mounted.status in (200, 204), mounted
        wrote = active.request("PUT", "/v1/kv/data/db", {"data": {"pw": "x1"}}, token=root)
        assert wrote.status == 200, wrote

        for node in cluster.nodes:
            node.kill()
        for node in cluster.nodes:
            node.start()
        cluster.wait_roles(timeout=120)
        config = cluster.active().request("GET", "/v1/sys/storage/raft/configuration", token=root)
        assert config.status == 200, config
        members = sorted(s["node_id"] for s in config.json["data"]["config"]["servers"])
        assert members == ["node1", "node2", "node3"]
        read = cluster.active().request("GET", "/v1/kv/data/db", token=root)
        assert read.status == 200 and read.json["data"]["data"] == {"pw": "x1"}, read
    finally:
        cluster.close()
