"""One Raft node's cluster membership, wired into the core's lifecycle.

The core calls in at four points: init (bootstrap a one-voter cluster),
between reconstructing the root key and unsealing the barrier (start the
replica, or finish a join), after unseal (watch the Raft role) and on seal
(stop everything, close the replica). The replica only ever starts with the
transport secret derived from the root key, so it never runs sealed.

The cluster sees the core only as a :class:`~node.cluster.ports.HostCore`;
the core sits above it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from node.cluster import joiner
from node.cluster.errors import ClusterUnavailableError, NoActiveNodeError, RemovedError
from node.cluster.join import Challenges, PeerHttp, PendingJoin
from node.cluster.membership import ask_peers
from node.cluster.ports import HostCore, Invalidation, Replica
from node.cluster.registry import NodeRecord, Registry
from node.cluster.relay import NonceLedger
from node.cluster.role import HAState, derive_role
from node.cluster.sealed_leader import SealedLeaderGuard
from node.cluster.secrets import (
    challenge_key,
    forwarding_key,
    index_state_key,
    new_nonce,
    raft_secret,
    raft_tls_key,
    seal_challenge,
)
from node.cluster.staleness import StalenessBounds, stale_now
from node.cluster.storage import RaftStorage
from node.cluster.tls_keeper import TLSKeeper
from node.cluster.tls_keyring import issue_at_init
from node.cluster.watch import Watcher
from node.outbound import HttpClient
from node.seal.config import SEAL_CONFIG_PATH
from node.seal.shamir_seal import ROOT_KEY_PATH
from sdk.errors import (
    AlreadyInitializedError,
    CofferError,
    InvalidRequestError,
    SealedError,
    StorageError,
)

__all__ = ["Cluster", "ClusterSettings"]

log = logging.getLogger("coffer.cluster")


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    node_id: str
    api_addr: str
    cluster_addr: str
    retry_join: tuple[Mapping[str, str], ...] = field(default_factory=tuple)
    performance_standby: bool = True
    #: How long unseal waits for a leader (a lone node of a cold cluster proceeds without).
    unseal_wait: float = 3.0
    #: How long a joiner waits for the leader to add it and send the keyring.
    join_wait: float = 30.0
    #: When a performance standby stops serving reads from its replica.
    staleness: StalenessBounds = field(default_factory=StalenessBounds)


#: Marker keys a node writes after it comes up, to know it has caught up.
SYNC_PREFIX = "core/raft/sync/"


class Cluster:
    def __init__(
        self,
        core: HostCore,
        storage: RaftStorage,
        settings: ClusterSettings,
        invalidator: Invalidation,
    ) -> None:
        self.core = core
        self.storage = storage
        self.driver = storage.driver
        self.settings = settings
        #: Outgoing HTTP to other nodes (join, membership); set by the server.
        self.http: PeerHttp | None = None
        self.removed = self.driver.was_removed()
        self.invalidator = invalidator
        self.watcher = Watcher(self)
        #: Hands Raft leadership on while sealed after a failed unseal (Raft kept).
        self.sealed_leader = SealedLeaderGuard(lambda: self.replica)
        #: The Raft TLS keyring: issuing, rotating, reloading (``tls_keeper``).
        self.tls = TLSKeeper(storage, settings.node_id, settings.cluster_addr, self.is_active)
        self.challenges = Challenges()
        self.registry = Registry(storage)
        self.pending_join: PendingJoin | None = None
        self.forward_key: bytes | None = None
        #: Signs and checks ``X-Vault-Index`` states (``node.cluster.consistency``).
        self.index_key: bytes | None = None
        #: Nonces of the forwarded requests this node accepted (see ``relay``).
        self.relay_nonces = NonceLedger()
        self._retry_joining = False
        self._challenge_key: bytes | None = None
        self._unsubscribe: Any = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def replica(self) -> Replica | None:
        return self.storage.replica

    # -- role --------------------------------------------------------------------------

    def is_active(self) -> bool:
        """Whether this node is the active node now: what :meth:`state` says in
        ``active``, without building the rest (asked on every request)."""
        replica = self.replica
        if self.removed or self.core.sealed or replica is None:
            return False
        return replica.is_leader() and replica.has_lease()

    async def state(self) -> HAState:
        replica = self.replica
        if self.removed:
            return HAState(ha_enabled=True, sealed=True, removed=True)
        if self.core.sealed or replica is None:
            return HAState(ha_enabled=True, sealed=True)
        is_leader = replica.is_leader()
        active, perf = derive_role(
            sealed=False,
            is_leader=is_leader,
            voter=True,
            performance_standbys=self.settings.performance_standby,
            has_lease=is_leader and replica.has_lease(),
        )
        # A leader without its lease knows no active node (not even itself).
        leader = None if is_leader and not active else replica.leader()
        record: NodeRecord | None = None
        if active:
            record = self._self_record()
        elif leader is not None:
            record = await self.registry.get(leader.node_id)
            if record is None:
                found = [r for r in await self.registry.all() if r.cluster_addr == leader.address]
                record = found[0] if found else None
        lost = 0.0 if active else time.monotonic() - self.watcher.leader_contact
        return HAState(
            ha_enabled=True,
            sealed=False,
            active=active,
            performance_standby=perf,
            leader_id=record.node_id if record else (leader.node_id if leader else ""),
            leader_api_addr=record.api_addr if record else "",
            leader_cluster_addr=leader.address if leader else "",
            active_time=self.watcher.active_since if active else 0.0,
            caught_up=active or self.watcher.caught_up,
            stale=""
            if active
            else stale_now(
                self.settings.staleness, ticked=self.watcher.stale, leader_lost_for=lost
            ),
            leader_lost_for=lost,
            committed_index=replica.committed_index(),
            applied_index=replica.applied_index(),
        )

    def _self_record(self) -> NodeRecord:
        s = self.settings
        return NodeRecord(s.node_id, s.api_addr, s.cluster_addr)

    # -- init: bootstrap a one-voter cluster ---------------------------------------------

    async def begin_initialize(self) -> None:
        if self.removed:
            raise RemovedError()
        if self.pending_join is not None:
            raise InvalidRequestError("this node is joining a cluster; unseal it instead")
        if self.driver.has_data() or await self.core.initialized():
            raise AlreadyInitializedError("Coffer is already initialized")
        self.storage.begin_staging()

    async def finish_initialize(self, root_key: bytes) -> None:
        """Create the cluster CA and this node's certificate (staged with init's
        writes), start the replica with them and the new root key's secret, and
        commit init's writes."""
        settings = self.settings
        tls = await issue_at_init(
            self.storage, raft_tls_key(root_key), settings.node_id, settings.cluster_addr
        )
        self.tls.presenting(tls)
        replica = await self.driver.open(raft_secret(root_key), peers={}, tls=tls)
        self.storage.attach(replica)
        await self._wait_for_leader(replica, 10.0, required=True)
        await self.storage.flush_staging()
        self._keep_keys(root_key)

    async def abort_initialize(self) -> None:
        self.storage.abort_staging()
        await self.storage.detach()

    # -- unseal and seal -----------------------------------------------------------------

    async def before_barrier_unseal(self, root_key: bytes) -> None:
        """Start the replica (or finish a join) with the reconstructed root key's secret."""
        if self.removed:
            raise RemovedError()
        # An attempt after a failed one: its writes may need this node to lead.
        await self.sealed_leader.stop()
        if self.replica is None:
            if self.pending_join is not None:
                await joiner.complete_join(self, root_key)
            else:
                tls = await self.tls.material(root_key)
                replica = await self.driver.open(raft_secret(root_key), tls=tls)
                self.storage.attach(replica)
                await self._wait_for_leader(replica, self.settings.unseal_wait, required=False)
        self._keep_keys(root_key)

    def _keep_keys(self, root_key: bytes) -> None:
        self.forward_key = forwarding_key(raft_secret(root_key))
        self.index_key = index_state_key(self.forward_key)
        self._challenge_key = challenge_key(root_key)
        self.tls.keep(root_key)

    async def after_unseal(self) -> None:
        await self.sealed_leader.stop()
        replica = self.replica
        assert replica is not None
        self.invalidator.start(replica.applied_index())
        self._unsubscribe = replica.subscribe(self.invalidator.on_changes)
        self.watcher.start()
        self.tls.start(replica)

    async def on_seal(self, *, keep_raft: bool = False) -> None:
        """``keep_raft``: an unseal that failed after Raft opened keeps it open (and voting)."""
        await self.watcher.stop()
        await self.tls.stop()
        self.tls.forget()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        await self.invalidator.stop()
        self.challenges.clear()
        self.relay_nonces.clear()
        self.forward_key = self.index_key = self._challenge_key = None
        if keep_raft:
            self.sealed_leader.start()
        else:
            await self.sealed_leader.stop()
            await self.storage.detach()

    async def _wait_for_leader(self, replica: Replica, timeout: float, *, required: bool) -> None:
        deadline = time.monotonic() + timeout
        while replica.leader() is None:
            if time.monotonic() > deadline:
                if required:
                    raise ClusterUnavailableError(f"no raft leader within {timeout:g}s")
                log.warning("unsealed without a raft leader", extra={"event": "cluster.no_leader"})
                return
            await asyncio.sleep(0.02)
        with contextlib.suppress(CofferError):
            await replica.wait_for_index(
                replica.committed_index(), max(deadline - time.monotonic(), 0.5)
            )

    # -- joining (this node joins another's cluster) ---------------------------------------

    def outgoing_http(self) -> HttpClient | None:
        """The peers' client from the server, else the core's (None: no calls out)."""
        return self.http or self.core.http_client

    def http_client(self) -> HttpClient:
        client = self.outgoing_http()
        if client is None:
            raise ClusterUnavailableError("no outgoing HTTP client is configured")
        return client

    @contextlib.asynccontextmanager
    async def join_http(self, leader_ca_cert: str = "") -> AsyncIterator[HttpClient]:
        """The client for one join call: the peers' client, trusting ``leader_ca_cert`` too."""
        if not leader_ca_cert:
            yield self.http_client()
            return
        if self.http is None:
            raise ClusterUnavailableError("no outgoing HTTP client is configured")
        client = self.http.pinned(leader_ca_cert)
        try:
            yield client
        finally:
            await client.close()

    def trust_leader(self, leader_ca_cert: str) -> None:
        """Called once the leader accepted our answer: its CA is the cluster's now."""
        if leader_ca_cert and self.http is not None:
            self.http.trust(leader_ca_cert)

    async def join(self, leader_api_addr: str, leader_ca_cert: str = "") -> bool:
        """Fetch a challenge from ``leader_api_addr``; unsealing finishes the join."""
        return await joiner.join(self, leader_api_addr, leader_ca_cert)

    def _configured_leaders(self) -> list[str]:
        own = self.settings.api_addr.rstrip("/")
        return [
            entry["leader_api_addr"]
            for entry in self.settings.retry_join
            if entry.get("leader_api_addr", "").rstrip("/") != own
        ]

    def start_retry_join(self, leaders: list[str] | None = None, leader_ca_cert: str = "") -> None:
        targets = leaders or self._configured_leaders()
        if targets and not self.driver.has_data():
            self._retry_joining = True
            self._spawn(joiner.retry_join(self, targets, leader_ca_cert), "cluster-retry-join")

    def retry_join_stopped(self) -> None:
        self._retry_joining = False

    def awaiting_join(self) -> bool:
        """Whether this uninitialised node is (or will be) retrying a join that has not
        reached a leader yet: unsealing it has to wait for that, not for ``sys/init``."""
        if self.removed or self.pending_join is not None or self.driver.has_data():
            return False
        return self._retry_joining or bool(self._configured_leaders())

    # -- joining (the leader's side) -------------------------------------------------------

    def _leader_replica(self) -> Replica:
        replica = self.replica
        if self.core.sealed or replica is None:
            raise SealedError()
        if not replica.is_leader():
            raise NoActiveNodeError()
        return replica

    async def issue_challenge(self, server_id: str, source: str) -> dict[str, Any]:
        """A challenge for ``server_id``, asked for by the client at ``source``."""
        replica = self._leader_replica()
        if not server_id or len(server_id) > 128:
            raise InvalidRequestError("server_id is required")
        assert self._challenge_key is not None
        nonce = new_nonce()
        self.challenges.remember(server_id, nonce, source)
        config, root = await replica.get(SEAL_CONFIG_PATH), await replica.get(ROOT_KEY_PATH)
        if config is None or root is None:
            raise ClusterUnavailableError("the seal config is not stored yet")
        material = await self.tls.issue_for_joiner(server_id)
        self.challenges.attach(server_id, nonce, material)
        return {
            "raft_tls": base64.b64encode(material).decode("ascii"),
            "challenge": seal_challenge(self._challenge_key, server_id, nonce),
            "seal_config": base64.b64encode(config.value).decode("ascii"),
            "root_key_blob": base64.b64encode(root.value).decode("ascii"),
            "peers": {m.node_id: m.address for m in replica.configuration()},
        }

    async def accept_answer(
        self, server_id: str, answer: str, cluster_addr: str, non_voter: bool
    ) -> dict[str, Any]:
        replica = self._leader_replica()
        if non_voter:
            raise InvalidRequestError("non-voting members are not supported by this build")
        material = self.challenges.check(server_id, answer)
        await replica.add_peer(server_id, cluster_addr)
        if material:
            await self.tls.store_joined(server_id, material)
        peers = [
            {"id": m.node_id, "address": m.address, "suffrage": "voter"}
            for m in replica.configuration()
        ]
        return {"peers": peers}

    # -- membership ----------------------------------------------------------------------------

    async def publish_self(self) -> None:
        await self.registry.publish(self._self_record())

    async def sync_point(self) -> None:
        """Write a marker through Raft and wait until this replica applied it."""
        replica = self.replica
        if replica is None:
            raise StorageError("no replica")
        key = f"{SYNC_PREFIX}{self.settings.node_id}"
        index = await self.storage.put(key, str(time.time()).encode())
        await replica.wait_for_index(index, 10.0)

    async def remove_peer(self, server_id: str) -> None:
        replica = self._leader_replica()
        await replica.remove_peer(server_id)
        with contextlib.suppress(CofferError):
            await self.registry.forget(server_id)
        with contextlib.suppress(CofferError):  # the sweep drops it otherwise
            await self.tls.forget_node(server_id)

    def member_answer(self, node_id: str) -> bool:
        """Whether ``node_id`` is in the configuration, as a node with a leader sees it."""
        replica = self.replica
        if self.core.sealed or replica is None or replica.leader() is None:
            raise ClusterUnavailableError("this node does not know the current configuration")
        return node_id in {m.node_id for m in replica.configuration()}

    async def peers_say_removed(self) -> bool:
        return await ask_peers(self)

    def schedule_removal(self) -> None:
        self._spawn(self.handle_removed(), "cluster-removed")

    async def handle_removed(self) -> None:
        self.removed = True
        await asyncio.to_thread(self.driver.mark_removed)
        await self.core.seal()

    def _spawn(self, coroutine: Any, name: str) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        await self.sealed_leader.stop()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
