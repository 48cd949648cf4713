"""The joining node's side of ``join.py``: fetch a challenge, answer it at unseal.

Kept apart from :mod:`node.cluster.cluster` so the lifecycle hooks stay short;
these functions act on a :class:`~node.cluster.cluster.Cluster`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from node.barrier.barrier import KEYRING_PATH
from node.cluster.errors import ClusterUnavailableError, RemovedError
from node.cluster.join import fetch_challenge, send_answer
from node.cluster.secrets import challenge_key, open_challenge, raft_secret, raft_tls_key
from node.cluster.tls_keyring import open_node
from node.seal.config import SEAL_CONFIG_PATH
from node.seal.shamir_seal import ROOT_KEY_PATH
from sdk.certs import RaftTLS
from sdk.errors import CofferError, InvalidRequestError, StorageError

if TYPE_CHECKING:
    from node.cluster.cluster import Cluster

__all__ = ["complete_join", "join", "retry_join"]

log = logging.getLogger("coffer.cluster")


async def join(cluster: Cluster, leader_api_addr: str, leader_ca_cert: str = "") -> bool:
    """Fetch a challenge from ``leader_api_addr``; unsealing finishes the join.

    ``leader_ca_cert`` is trusted for this join's calls only, until the leader
    accepts the answer (:func:`complete_join`).
    """
    if cluster.removed:
        raise RemovedError()
    if cluster.pending_join is not None or await cluster.core.initialized():
        return True
    async with cluster.join_http(leader_ca_cert) as http:
        ticket = await fetch_challenge(
            http, leader_api_addr, cluster.settings.node_id, leader_ca_cert
        )
    if cluster.pending_join is not None or await cluster.core.initialized():
        return True
    cluster.pending_join = ticket
    cluster.storage.set_overlay(
        {SEAL_CONFIG_PATH: ticket.seal_config, ROOT_KEY_PATH: ticket.root_key_blob}
    )
    log.info("joining; waiting for unseal keys", extra={"event": "cluster.join_pending"})
    return True


async def retry_join(cluster: Cluster, targets: list[str], leader_ca_cert: str = "") -> None:
    try:
        await _retry(cluster, targets, leader_ca_cert)
    finally:
        cluster.retry_join_stopped()


async def _retry(cluster: Cluster, targets: list[str], leader_ca_cert: str) -> None:
    delay = 0.5
    while cluster.pending_join is None and not cluster.removed:
        if await cluster.core.initialized():
            return
        for target in targets:
            try:
                await cluster.join(target, leader_ca_cert)
                return
            except CofferError as exc:
                log.info(
                    "join attempt failed; retrying",
                    extra={"event": "cluster.join_retry", "leader": target, "error": str(exc)},
                )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


def _open_certificate(root_key: bytes, node_id: str, sealed: bytes) -> RaftTLS | None:
    """Our Raft key and certificate from the challenge; None from a leader that
    predates them (the CA derived from the transport secret stands in)."""
    if not sealed:
        return None
    try:
        return open_node(raft_tls_key(root_key), node_id, sealed)
    except StorageError as exc:
        raise InvalidRequestError(
            "the leader's raft certificate does not open with these unseal keys"
        ) from exc


async def complete_join(cluster: Cluster, root_key: bytes) -> None:
    ticket = cluster.pending_join
    assert ticket is not None
    node_id = cluster.settings.node_id
    nonce = open_challenge(challenge_key(root_key), node_id, ticket.challenge)
    # Our Raft certificate, issued by the leader with the challenge (see join.py).
    tls = _open_certificate(root_key, node_id, ticket.raft_tls)
    cluster.tls.presenting(tls)
    replica = await cluster.driver.open(raft_secret(root_key), peers=ticket.peers, tls=tls)
    try:
        async with cluster.join_http(ticket.leader_ca_cert) as http:
            await send_answer(http, ticket, node_id, nonce, cluster.settings.cluster_addr)
        # The leader accepted our answer: it holds the root key, so its CA is trusted.
        cluster.trust_leader(ticket.leader_ca_cert)
        deadline = time.monotonic() + cluster.settings.join_wait
        while replica.leader() is None or await replica.get(KEYRING_PATH) is None:
            if time.monotonic() > deadline:
                raise ClusterUnavailableError("joined, but did not catch up with the leader")
            await asyncio.sleep(0.05)
        with contextlib.suppress(CofferError):
            await replica.wait_for_index(replica.committed_index(), 10.0)
    except BaseException:
        await replica.close()
        await asyncio.to_thread(cluster.driver.discard)
        cluster.pending_join = None
        cluster.storage.set_overlay({})
        # The seal config the core read from the overlay goes with it: kept, the node
        # would read as initialised with no data, skip every further join and answer
        # each unseal "root key missing from storage".
        cluster.core.forget_seal_config()
        cluster.start_retry_join(leader_ca_cert=ticket.leader_ca_cert)
        raise
    cluster.pending_join = None
    cluster.storage.attach(replica)
    log.info("joined the raft cluster", extra={"event": "cluster.joined"})
