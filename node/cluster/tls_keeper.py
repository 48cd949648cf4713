"""An unsealed node's Raft TLS duties: issue to joiners, rotate, and reload.

* The leader issues a joiner's key pair and certificate in the join challenge,
  sealed so only a node unsealed with the cluster's keys opens it, and stores
  it once the joiner answered (:mod:`node.cluster.cluster` calls in).
* The active node sweeps the keyring when it becomes active and every
  ``sweep_every`` seconds after that: every member whose certificate is past
  half its validity gets a new key pair and certificate (``tls_keyring.renew``),
  as Vault's active node rotates its raft TLS keyring by itself.
* Every node watches its own record: when the active node rotated it, the
  replica presents the new certificate from the next handshake on.

The keys live only while the node is unsealed (:meth:`keep` / :meth:`forget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from node.cluster.ports import Replica
from node.cluster.secrets import raft_secret, raft_tls_key
from node.cluster.storage import RaftStorage
from node.cluster.tls_keyring import (
    NODE_PREFIX,
    ensure_ca,
    host_of,
    material_at_start,
    open_node,
    renew,
    seal_node,
)
from sdk.certs import RaftTLS
from sdk.errors import CofferError, SealedError
from sdk.physical import AppliedChanges

__all__ = ["TLSKeeper"]

log = logging.getLogger("coffer.cluster")

#: How often the active node looks for certificates to renew (they live 30 days).
SWEEP_EVERY = 3600.0
_TICK = 1.0


class TLSKeeper:
    """``is_active`` says whether this node is the active node now (the sweeper)."""

    def __init__(
        self,
        storage: RaftStorage,
        node_id: str,
        cluster_addr: str,
        is_active: Callable[[], bool],
        sweep_every: float = SWEEP_EVERY,
    ) -> None:
        self._storage = storage
        self._node_id = node_id
        self._cluster_addr = cluster_addr
        self._is_active = is_active
        self.sweep_every = sweep_every
        self._key: bytes | None = None
        self._legacy_secret: bytes | None = None
        #: The certificate the replica presents now (PEM), b"" when unknown.
        self._presented = b""
        self._task: asyncio.Task[None] | None = None
        self._reloads: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None

    # -- keys and the material the replica starts with ----------------------------------

    def keep(self, root_key: bytes) -> None:
        self._key = raft_tls_key(root_key)
        self._legacy_secret = raft_secret(root_key)

    def forget(self) -> None:
        self._key = self._legacy_secret = None
        self._presented = b""

    def _keys(self) -> tuple[bytes, bytes]:
        if self._key is None or self._legacy_secret is None:
            raise SealedError()
        return self._key, self._legacy_secret

    async def material(self, root_key: bytes) -> RaftTLS | None:
        """What a restarting node starts Raft with (read from its own files)."""
        tls = await material_at_start(
            self._storage, raft_tls_key(root_key), self._node_id, host_of(self._cluster_addr)
        )
        self.presenting(tls)
        return tls

    def presenting(self, tls: RaftTLS | None) -> None:
        self._presented = tls.cert_pem if tls is not None else b""

    # -- the leader's side of a join ---------------------------------------------------

    async def issue_for_joiner(self, server_id: str) -> bytes:
        """A new key pair and certificate for ``server_id``, sealed for the challenge."""
        key, legacy = self._keys()
        ca = await ensure_ca(self._storage, key, legacy)
        return seal_node(key, server_id, ca.issue(server_id))

    async def store_joined(self, server_id: str, sealed: bytes) -> None:
        """Keep the joiner's material: it reads it from its files when it restarts."""
        await self._storage.put(NODE_PREFIX + server_id, sealed)

    async def forget_node(self, server_id: str) -> None:
        """Drop a removed node's material (its certificate stays valid until it expires)."""
        await self._storage.delete(NODE_PREFIX + server_id)

    # -- running ------------------------------------------------------------------------

    def start(self, replica: Replica) -> None:
        self._unsubscribe = replica.subscribe(self._on_changes)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="cluster-tls")

    async def stop(self) -> None:
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        tasks = [t for t in (self._task, *self._reloads) if t is not None]
        self._task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._reloads.clear()

    def _on_changes(self, changes: AppliedChanges) -> None:
        own = NODE_PREFIX + self._node_id
        if changes.reset or own in changes.keys:
            task = asyncio.create_task(self._reload_logged(), name="cluster-tls-reload")
            self._reloads.add(task)
            task.add_done_callback(self._reloads.discard)

    async def _reload_logged(self) -> None:
        try:
            await self.reload()
        except CofferError as exc:
            log.warning(
                "cannot present the renewed raft certificate",
                extra={"event": "cluster.tls_reload_failed", "error": str(exc)},
            )

    async def reload(self) -> bool:
        """Present this node's stored certificate if it is not the one presented."""
        replica = self._storage.replica
        if replica is None or self._key is None:
            return False
        entry = await replica.get(NODE_PREFIX + self._node_id)
        if entry is None:
            return False
        tls = open_node(self._key, self._node_id, entry.value)
        if tls.cert_pem == self._presented:
            return False
        replica.reload_tls(tls)
        self._presented = tls.cert_pem
        log.info("presenting a renewed raft certificate", extra={"event": "cluster.tls_reload"})
        return True

    async def _run(self) -> None:
        next_sweep = 0.0
        while True:
            await asyncio.sleep(_TICK)
            if not self._is_active():
                next_sweep = 0.0  # sweep again as soon as this node becomes active
                continue
            if time.monotonic() < next_sweep:
                continue
            try:
                await self.sweep()
                next_sweep = time.monotonic() + self.sweep_every
            except CofferError as exc:
                log.warning(
                    "cannot renew raft certificates yet",
                    extra={"event": "cluster.tls_renew_failed", "error": str(exc)},
                )

    async def sweep(self) -> list[str]:
        """Renew the members' certificates that need it (the active node's duty)."""
        replica = self._storage.replica
        if replica is None:
            raise SealedError()
        key, legacy = self._keys()
        storage = self._storage
        ca = await ensure_ca(storage, key, legacy)
        # A member whose id is not known yet is listed under its address: skip it.
        members = {m.node_id: m.address for m in replica.configuration() if m.node_id != m.address}
        renewed = await renew(storage, key, ca, members)
        if renewed:
            log.info(
                "renewed raft certificates",
                extra={"event": "cluster.tls_renewed", "nodes": renewed},
            )
        with contextlib.suppress(CofferError):
            await self.reload()  # our own, if it was among them
        return renewed
