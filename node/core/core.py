"""The core: one node's lifecycle, mounts and request handling.

``api`` calls ``Core.handle`` for every logical request and the
lifecycle methods for the sealed-safe endpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from node.audit import AuditTable
from node.barrier.barrier import Barrier
from node.barrier.cache import DEFAULT_CACHE_SIZE
from node.barrier.view import BarrierView
from node.cluster.errors import ClusterUnavailableError
from node.config.model import SealStanza
from node.core.access import AccessControl
from node.core.dr_operation import DrOperationTokens, ReplicationMode
from node.core.lifecycle import Lifecycle, new_cluster_id
from node.core.login import IdentityLink, LoginCompleter
from node.core.mount_table import MountTable, delete_prefix
from node.core.pipeline import Pipeline
from node.core.replicated import ReplicatedWrites
from node.core.seal_guard import SealGuard
from node.core.state import SealStatus
from node.core.system.keys import make_token_generation
from node.core.wrapping import Wrapping
from node.engines.cubbyhole import CubbyholeBackend
from node.logical.request import Request
from node.logical.response import Login, Response
from node.namespaces.model import ROOT_ID, Namespace
from node.namespaces.store import NamespaceStore, validate_name
from node.observability.metrics import Metrics
from node.outbound import HttpClient
from node.policy.store import PolicyStore
from node.replication.manager import Replication
from node.routing.router import Router
from node.seal.base import AutoSeal
from node.seal.factory import migration_source, open_seal
from node.tokens.entry import TokenEntry
from node.tokens.expiration import ExpirationManager
from node.tokens.store import TokenStore
from node.version import VERSION
from sdk.errors import (
    CofferError,
    ConflictError,
    InvalidRequestError,
    NotInitializedError,
    SealedError,
    StorageError,
)
from sdk.physical import PhysicalBackend
from sdk.timings import RaftTimings

if TYPE_CHECKING:
    from node.cluster.cluster import Cluster

__all__ = ["VERSION", "Core", "CoreSettings", "InitOutput"]

log = logging.getLogger("coffer.core")

#: What a DR secondary serves (besides the sealed-safe routes of ``api/routes_sys.py``).
DR_SECONDARY_PATHS = re.compile(r"^sys/(replication/.*|decode-token)$")


class DRSecondaryError(CofferError):
    status = 400

    def __init__(self) -> None:
        super().__init__("path disabled in replication DR secondary mode")


@dataclass(frozen=True, slots=True)
class CoreSettings:
    storage_type: str = "inmem"
    cluster_name: str = ""
    api_addr: str = ""
    unauthenticated_metrics: bool = False
    default_lease_ttl: int = 2764800
    max_lease_ttl: int = 2764800
    #: The barrier's read cache of decrypted values (Vault's ``cache_size``/``disable_cache``).
    cache_size: int = DEFAULT_CACHE_SIZE
    disable_cache: bool = False
    #: The ``seal`` stanza; ``None`` is Shamir unless ``COFFER_SEAL_TYPE`` says otherwise.
    seal: SealStanza | None = None


@dataclass(frozen=True, slots=True)
class InitOutput:
    keys_hex: list[str]
    keys_base64: list[str]
    root_token: str
    #: Under an HSM seal the operators' shares are recovery keys (``keys`` is then empty).
    recovery_keys_hex: list[str] = field(default_factory=list)
    recovery_keys_base64: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return "InitOutput(<redacted>)"


class Core:
    """Ties the barrier, seal, token store, mounts and router together."""

    def __init__(self, physical: PhysicalBackend, settings: CoreSettings | None = None) -> None:
        self.settings = settings or CoreSettings()
        self.physical = physical
        self.barrier = Barrier(
            physical,
            cache_size=self.settings.cache_size,
            disable_cache=self.settings.disable_cache,
        )
        stanza = self.settings.seal
        kind, options = (stanza.type, stanza.options) if stanza else (None, {})
        seal = open_seal(kind, options, physical, os.environ)
        old_seal = migration_source(kind, options, physical, os.environ)
        self.lifecycle = Lifecycle(self.barrier, seal, old_seal)
        self.lifecycle.before_unseal = self._before_barrier_unseal
        # Under an HSM seal, seal-wrapped values are wrapped by it (none under Shamir).
        self.barrier.wrapper = self.lifecycle.auto_seal
        if isinstance(old_seal, AutoSeal):  # migrated away from an HSM: wrapped entries still read
            self.barrier.unwrapper = old_seal
        self.tokens = TokenStore(
            BarrierView(self.barrier, "sys/token/"), generation=self.barrier.read_generation
        )
        self.tokens.on_revoke.append(self._destroy_cubbyhole)
        self.expiration = ExpirationManager(self.tokens)
        self.namespaces = NamespaceStore(BarrierView(self.barrier, "sys/namespaces/"))
        self._policy_stores: dict[str, PolicyStore] = {}
        self.access = AccessControl(self)
        self.wrapping = Wrapping(self)
        self.logins = LoginCompleter(self)
        #: Outgoing HTTP for auth methods that call third parties; set by ``api.app``.
        self.http_client: HttpClient | None = None
        #: Raft membership and HA role; ``None`` on inmem/file storage (always active).
        self.cluster: Cluster | None = None
        #: The identity subsystem, once it is wired; logins skip entity linking without it.
        self.identity: IdentityLink | None = None
        self.router = Router()
        #: The one owner of mounts: every backend is mounted, tuned, moved and dropped here.
        self.mounts = MountTable(self)
        #: Where writes applied by replication (Raft today) enter the core.
        self.replicated = ReplicatedWrites(self)
        #: Cross-cluster replication (``node/replication``); its network is set by ``api``.
        self.replication = Replication(
            physical, self.barrier, self.router, self.namespaces, lambda: self.http_client
        )
        self.replication.forwarded_handler = self._handle_forwarded
        self.replication.identity_link_handler = self._link_secondary_login
        self.replication.seal_self = self.seal
        self.audit = AuditTable(BarrierView(self.barrier, ""), self._identity_policies)
        self.metrics = Metrics()
        cache = self.barrier.cache
        self.metrics.watch_cache(lambda: (cache.hits, cache.misses, len(cache)))
        self.metrics.watch_raft(self._raft_timings)
        self.pipeline = Pipeline(self)
        self.token_generation = make_token_generation(self)
        #: The DR operation-token feature's view of the replication state (``dr_operation``).
        self.replication_mode: ReplicationMode = self.replication.mode_of
        self.dr_operation_tokens = DrOperationTokens(self)
        self.cluster_name = ""
        self.cluster_id = ""
        self.started_at = time.time()
        self._serving = False
        #: Seal and unseal run one at a time; status reads wait for one in progress.
        self.seal_guard = SealGuard()
        #: One change of the active duties at a time: the cluster watcher starts them
        #: while a role change (``restart_active_duties``) may be restarting them.
        self._duties = asyncio.Lock()

    def _raft_timings(self) -> RaftTimings | None:
        """The running replica's timings for ``sys/metrics`` (None without one)."""
        replica = self.cluster.replica if self.cluster is not None else None
        return replica.timings() if replica is not None else None

    # -- lifecycle ------------------------------------------------------------

    @property
    def sealed(self) -> bool:
        """Sealed to clients until unseal has fully finished (mounts loaded),
        and during ``initialize``, which unseals only to write the first state."""
        return self.barrier.sealed or not self._serving

    @property
    def is_standby(self) -> bool:
        """Whether requests here are read-only: a cluster node that is not the active node."""
        return self.cluster is not None and not self.cluster.is_active()

    async def initialized(self) -> bool:
        return await self.lifecycle.initialized()

    def forget_seal_config(self) -> None:
        self.lifecycle.forget_configs()

    async def initialize(
        self, shares: int, threshold: int, recovery_shares: int = 0, recovery_threshold: int = 0
    ) -> InitOutput:
        """Under an HSM seal the shares are recovery keys and the node unseals itself."""
        counts = (shares, threshold, recovery_shares, recovery_threshold)
        if self.cluster is None:
            keys_hex, keys_b64, root_key = await self.lifecycle.initialize(*counts)
        else:
            keys_hex, keys_b64, root_key = await self._initialize_raft(*counts)
        try:
            await self._post_unseal(serve=False)
            root_token, _ = await self.tokens.create_root()
        finally:
            await self.seal()
        del root_key
        if self.lifecycle.auto_seal is None:
            return InitOutput(keys_hex, keys_b64, root_token)
        await self.unseal_with_stored_key()
        return InitOutput([], [], root_token, keys_hex, keys_b64)

    async def _initialize_raft(
        self, shares: int, threshold: int, recovery_shares: int, recovery_threshold: int
    ) -> tuple[list[str], list[str], bytes]:
        """Init's writes are staged until the new root key can start the replica."""
        assert self.cluster is not None
        await self.cluster.begin_initialize()
        try:
            output = await self.lifecycle.initialize(
                shares, threshold, recovery_shares, recovery_threshold
            )
            await self.cluster.finish_initialize(output[2])
        except BaseException:
            self.lifecycle.seal_barrier()
            await self.cluster.abort_initialize()
            raise
        return output

    async def unseal(self, key: str, migrate: bool = False) -> SealStatus:
        """``migrate``: the key is a share of the old seal of a seal migration."""
        async with self.seal_guard.hold():
            if await self.lifecycle.submit_share(key, migrate):
                await self._finish_unseal()
            return await self._seal_status()

    async def unseal_with_stored_key(self) -> None:
        """Auto-unseal from the HSM (``node.core.auto_unseal`` retries it at start)."""
        async with self.seal_guard.hold():
            if not await self.lifecycle.unseal_with_stored_key():
                return
            await self._finish_unseal()
        seal = self.lifecycle.auto_seal
        if seal is not None and not self.is_standby:
            with contextlib.suppress(CofferError):  # retried at the next unseal
                if await seal.rewrap_stored_keys():
                    await self.barrier.rewrite_keyring()
                    log.info(
                        "stored keys re-encrypted with the current HSM key",
                        extra={"event": "seal.rewrapped"},
                    )

    async def reset_unseal(self) -> SealStatus:
        if not await self.initialized():
            raise NotInitializedError()
        self.lifecycle.reset_progress()
        return await self.seal_status()

    async def seal(self) -> None:
        """Waits for an unseal in progress; status reads wait for this to finish."""
        async with self.seal_guard.hold(bounded=False):
            await self._seal_now()

    async def seal_soon(self, delay: float, then: Callable[[], None] | None = None) -> None:
        """Seal after ``delay`` (so the caller's answer leaves first), then run ``then``.
        From this call on the node counts as sealing: unseals and status reads wait."""

        async def action() -> None:
            await self._seal_now()
            if then is not None:
                then()

        await self.seal_guard.run_soon(delay, action)

    async def _seal_now(self, *, keep_raft: bool = False) -> None:
        self._serving = False  # from here ``sealed``: a restart of the duties refuses
        async with self._duties:  # one under way finishes first, then stops here
            await self._stop_active_duties()
        self._policy_stores.clear()
        self.access.clear()
        # Decrypted identity data must not outlive the seal; unseal re-registers stores.
        self.identity = None
        await self.mounts.unload_all()
        await self.audit.clear()
        self.namespaces.clear()
        self.tokens.forget_cached_salt()
        self.lifecycle.seal_barrier()
        if self.cluster is not None:
            await self.cluster.on_seal(keep_raft=keep_raft)
        self.metrics.unsealed.set(0)
        log.info("sealed", extra={"event": "core.sealed"})

    async def _before_barrier_unseal(self, root_key: bytes) -> None:
        if self.cluster is not None:
            await self.cluster.before_barrier_unseal(root_key)

    async def start_active_duties(self) -> None:
        """The cluster made this node active: it alone revokes expired leases."""
        async with self._duties:
            await self._start_active_duties()

    async def stop_active_duties(self) -> None:
        async with self._duties:
            await self._stop_active_duties()

    async def _start_active_duties(self) -> None:
        with contextlib.suppress(CofferError):  # retried on the next activation
            await self.tokens.migrate_accessors()  # plaintext keys of older versions
        if not self.replication.is_dr_secondary:  # a DR secondary's leases are the primary's
            await self.expiration.start()
        replica = self.cluster.replica if self.cluster is not None else None
        await self.replication.start_active(replica.applied_index() if replica else 0)

    async def _stop_active_duties(self) -> None:
        await self.replication.stop_active()
        await self.expiration.stop()

    async def _finish_unseal(self) -> None:
        """:meth:`_post_unseal`, or sealed again (still able to unseal) if it fails.

        An open barrier that never served would take no more shares: the node
        reported sealed until restarted. Seen when a DR secondary's nodes unseal
        together and one must write the cluster record while its Raft has no
        leader yet. Its Raft stays up (opened with this very key), so it still
        counts toward the quorum the next attempt, here or on a peer, needs; a
        storage failure on Raft is the cluster's unavailability: 503.
        """
        try:
            await self._post_unseal()
        except Exception as exc:
            await self._seal_now(keep_raft=True)
            if isinstance(exc, StorageError) and self.cluster is not None:
                raise ClusterUnavailableError(
                    f"unseal did not finish ({exc}); the node stays sealed: submit "
                    "the keys again once a quorum of its cluster is unsealing"
                ) from exc
            raise

    async def _post_unseal(self, serve: bool = True) -> None:
        cluster = await BarrierView(self.barrier, "core/").get_json("cluster")
        if cluster is None:
            cluster = {
                "name": self.settings.cluster_name or f"coffer-cluster-{new_cluster_id()[:8]}",
                "id": new_cluster_id(),
            }
            await BarrierView(self.barrier, "core/").put_json("cluster", cluster)
        self.cluster_name, self.cluster_id = cluster["name"], cluster["id"]
        await self.namespaces.load()
        with contextlib.suppress(CofferError):
            await self.replication.load()
        await self.mounts.load()
        await self.audit.reload()
        for namespace in self.namespaces.all():
            await self.policy_store(namespace.id).ensure_default()
        if self.cluster is None:
            await self.tokens.migrate_accessors()  # plaintext accessor keys of old versions
            await self.expiration.start()  # on Raft, only the active node runs it
        self._serving = serve
        if serve and self.cluster is not None:
            await self.cluster.after_unseal()
        self.metrics.unsealed.set(1 if serve else 0)
        log.info("unsealed", extra={"event": "core.unsealed"})

    async def seal_status(self) -> SealStatus:
        """Never a half-sealed state: waits (bounded) for a seal or unseal in progress."""
        await self.seal_guard.settled()
        return await self._seal_status()

    async def _seal_status(self) -> SealStatus:
        config = await self.lifecycle.seal_config()
        shares = await self.lifecycle.share_config_for_status() if config else None
        migration = await self.lifecycle.migration()
        old = self.lifecycle.migrate_from
        seal = old if migration and old is not None else self.lifecycle.seal
        progress = self.lifecycle.progress
        return SealStatus(
            type=config.type if config else self.lifecycle.seal.type,
            initialized=config is not None,
            sealed=self.sealed,
            threshold=shares.secret_threshold if shares else 0,
            shares=shares.secret_shares if shares else 0,
            progress=progress.progress if progress else 0,
            nonce=progress.nonce if progress else "",
            version=VERSION,
            cluster_name=self.cluster_name,
            cluster_id=self.cluster_id,
            storage_type=self.settings.storage_type,
            recovery_seal=seal.recovery,
            migration=migration,
        )

    async def dev_bootstrap(self, root_token_id: str = "") -> InitOutput:
        """Initialise with one share and unseal, as ``server -dev`` does
        (under an HSM seal: one recovery key, and the node unseals itself)."""
        if self.lifecycle.seal.recovery:
            output = await self.initialize(0, 0, 1, 1)
        else:
            output = await self.initialize(1, 1)
            await self.unseal(output.keys_hex[0])
        if root_token_id:
            if root_token_id != root_token_id.strip():
                raise InvalidRequestError("dev root token id may not have surrounding spaces")
            await self.tokens.revoke(output.root_token)
            await self.tokens.create_root_with_id(root_token_id)
            output = dataclasses.replace(output, root_token=root_token_id)
        return output

    # -- requests -----------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        if self.replication.is_dr_secondary and not DR_SECONDARY_PATHS.match(request.path):
            raise DRSecondaryError()
        return await self.pipeline.handle(request)

    async def restart_active_duties(self) -> None:
        """A replication role changed: the active node's duties follow the new role."""
        async with self._duties:
            if self.is_standby or self.sealed:
                return
            await self._stop_active_duties()
            await self._start_active_duties()

    async def _handle_forwarded(self, request: Request) -> tuple[Response, int]:
        """A performance secondary's write (``node.replication``): the answer, and the
        applied index it must wait for before it answers its client."""
        response = await self.pipeline.handle_forwarded(request)
        replica = self.cluster.replica if self.cluster is not None else None
        return response, replica.applied_index() if replica is not None else 0

    async def _link_secondary_login(
        self, namespace_id: str, mount_accessor: str, login: Login
    ) -> tuple[str, int]:
        """A login on a performance secondary (``node.replication``): its entity id,
        found or created here, and the applied index the secondary waits for."""
        if self.sealed:
            raise SealedError()
        mount = next(
            (
                m
                for m in self.router.entries()
                if m.accessor == mount_accessor and m.namespace_id == namespace_id
            ),
            None,
        )
        if mount is None or self.identity is None:
            raise InvalidRequestError(f"no auth mount with accessor {mount_accessor!r}")
        entity_id = await self.identity.link_login(namespace_id, mount, login)
        replica = self.cluster.replica if self.cluster is not None else None
        return entity_id, replica.applied_index() if replica is not None else 0

    async def _destroy_cubbyhole(self, entry: TokenEntry) -> None:
        """A revoked token's cubbyhole data goes, in every namespace it wrote to."""
        if not entry.cubbyhole_id:
            return
        for mount in self.router.entries():
            route = self.router.match(mount.route_path) if mount.type == "cubbyhole" else None
            if route is not None and isinstance(route.backend, CubbyholeBackend):
                await route.backend.destroy(entry.cubbyhole_id)

    async def _identity_policies(self, entry: TokenEntry) -> list[str]:
        """The entity's identity policies, for a token's audit entries."""
        if self.identity is None:
            return []
        found = await self.identity.policies_for(entry.entity_id, entry.namespace_id)
        return list(found.identity_policies)

    async def describe_token(self, entry: TokenEntry, token_id: str) -> dict[str, Any]:
        """A token lookup's ``data``, with its namespace and live identity policies."""
        data = entry.lookup_data(token_id)
        namespace = self.namespaces.by_id(entry.namespace_id)
        data["namespace_path"] = namespace.path if namespace else ""
        if entry.entity_id and self.identity is not None:
            found = await self.identity.policies_for(entry.entity_id, entry.namespace_id)
            data["identity_policies"] = found.identity_policies
            data["external_namespace_policies"] = found.external_namespace_policies
        return data

    # -- namespaces and their policies ------------------------------------------------

    def policy_store(self, namespace_id: str = ROOT_ID) -> PolicyStore:
        store = self._policy_stores.get(namespace_id)
        if store is None:
            namespace = self.namespaces.by_id(namespace_id)
            prefix = namespace.storage_prefix if namespace is not None else ""
            store = PolicyStore(BarrierView(self.barrier, prefix + "sys/policy/"))
            self._policy_stores[namespace_id] = store
        return store

    @property
    def policies(self) -> PolicyStore:
        """The root namespace's policy store."""
        return self.policy_store(ROOT_ID)

    async def create_namespace(
        self, parent: Namespace, name: str, custom_metadata: dict[str, str]
    ) -> Namespace:
        path = f"{parent.path}{validate_name(name)}/"
        if self.namespaces.by_path(path) is not None:
            raise InvalidRequestError(f"namespace {path.rstrip('/')!r} already exists")
        for mount in self.router.entries():
            if mount.route_path.startswith(path) or path.startswith(mount.route_path):
                raise InvalidRequestError(f"path is already in use by the mount {mount.route_path}")
        namespace = await self.namespaces.create(parent, name, custom_metadata)
        await self.mounts.load_namespace(namespace)
        await self.policy_store(namespace.id).ensure_default()
        log.info(
            "namespace created", extra={"event": "namespace.created", "namespace": namespace.path}
        )
        return namespace

    async def delete_namespace(self, namespace: Namespace) -> None:
        """Remove a namespace with everything in it; refused while it has children."""
        if namespace.is_root:
            raise InvalidRequestError("the root namespace cannot be deleted")
        if self.namespaces.children(namespace):
            raise ConflictError(
                f"namespace {namespace.path.rstrip('/')!r} has child namespaces; delete them first"
            )
        for entry in await self.tokens.all_entries():
            if entry.namespace_id == namespace.id:
                await self.tokens.revoke_tree(entry)
        await self.mounts.unload_namespace(namespace.id)
        if self.identity is not None:
            self.identity.unregister(namespace.id)
        await delete_prefix(BarrierView(self.barrier, namespace.storage_prefix))
        self._policy_stores.pop(namespace.id, None)
        self.access.clear()
        await self.namespaces.forget(namespace)
        log.info(
            "namespace deleted", extra={"event": "namespace.deleted", "namespace": namespace.path}
        )

    async def close(self) -> None:
        await self.lifecycle.seal.close()
        await self.physical.close()
