"""The compose HSM variant: ``docker restart`` of any node, or all, needs no key typed.

Every node gets the same SoftHSM2 token (one volume); nothing in this test calls
``sys/unseal``, so a node that is unsealed after a restart unsealed itself.
"""

from __future__ import annotations

from functools import partial

import pytest

from deploy.clusterctl import NODES, ComposeCluster, http_request, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(900)]

SERVING = (200, 429, 473)


def read_secret(cluster: ComposeCluster, service: str) -> object:
    reply = http_request(
        "GET", cluster.url(service) + "/v1/secret/data/hsm", token=cluster.root_token
    )
    doc = reply.doc
    if reply.status != 200 or not isinstance(doc, dict):
        return None
    return doc["data"]["data"]


def serving_with_secret(cluster: ComposeCluster, service: str) -> bool:
    status = cluster.seal_status(service)
    if status.get("sealed") is not False or cluster.health(service) not in SERVING:
        return False
    return read_secret(cluster, service) == {"made": "before the restarts"}


def restart(cluster: ComposeCluster, *services: str) -> None:
    cluster.docker("restart", "--time", "20", *(cluster.container(s) for s in services))
    for service in services:
        wait_until(
            partial(serving_with_secret, cluster, service),
            120,
            f"{service} unsealed by itself and serving the secret",
        )


def test_docker_restart_unseals_from_the_shared_token(
    hsm_compose_cluster: ComposeCluster,
) -> None:
    cluster = hsm_compose_cluster
    keys = cluster.load_keys()
    assert keys["unseal_keys_b64"] == [] and len(keys["recovery_keys_b64"]) == 5
    for service in NODES:
        status = cluster.seal_status(service)
        assert status["type"] == "pkcs11" and status["recovery_seal"] is True, status
        assert status["sealed"] is False

    # secret/ is the KV v2 mount init makes.
    wrote = http_request(
        "POST",
        cluster.lb_url + "/v1/secret/data/hsm",
        body={"data": {"made": "before the restarts"}},
        token=cluster.root_token,
    )
    assert wrote.status == 200, wrote.body

    for service in NODES:
        restart(cluster, service)
        cluster.wait_ready()
    restart(cluster, *NODES)
    ready = cluster.wait_ready()
    assert sorted(s["node_id"] for s in ready["servers"]) == sorted(NODES)
    for service in NODES:
        assert cluster.seal_status(service)["type"] == "pkcs11"
