"""The core: one node's lifecycle, mounts and request handling.

``api`` calls ``Core.handle`` for every logical request and the
lifecycle methods for the sealed-safe endpoints.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.core.lifecycle import Lifecycle, new_cluster_id
from node.core.mount_table import MountTable
from node.core.pipeline import Pipeline
from node.core.state import SealStatus
from node.core.wrapping import Wrapping
from node.engines.cubbyhole import CubbyholeBackend
from node.engines.system.keys import make_root_generation
from node.errors import InvalidRequestError, NotInitializedError
from node.logical.request import Request
from node.logical.response import Response
from node.observability.metrics import Metrics
from node.physical.base import PhysicalBackend
from node.policy.store import PolicyStore
from node.routing.router import Router
from node.seal.shamir_seal import ShamirSeal
from node.tokens.entry import TokenEntry
from node.tokens.expiration import ExpirationManager
from node.tokens.store import TokenStore

__all__ = ["VERSION", "Core", "CoreSettings", "InitOutput"]

VERSION = "0.1.0"
log = logging.getLogger("coffer.core")


@dataclass(frozen=True, slots=True)
class CoreSettings:
    storage_type: str = "inmem"
    cluster_name: str = ""
    api_addr: str = ""
    unauthenticated_metrics: bool = False
    default_lease_ttl: int = 2764800
    max_lease_ttl: int = 2764800


@dataclass(frozen=True, slots=True)
class InitOutput:
    keys_hex: list[str]
    keys_base64: list[str]
    root_token: str

    def __repr__(self) -> str:
        return "InitOutput(<redacted>)"


class Core:
    """Ties the barrier, seal, token store, mounts and router together."""

    def __init__(self, physical: PhysicalBackend, settings: CoreSettings | None = None) -> None:
        self.settings = settings or CoreSettings()
        self.physical = physical
        self.barrier = Barrier(physical)
        self.lifecycle = Lifecycle(self.barrier, ShamirSeal(physical))
        self.tokens = TokenStore(BarrierView(self.barrier, "sys/token/"))
        self.tokens.on_revoke.append(self._destroy_cubbyhole)
        self.expiration = ExpirationManager(self.tokens)
        self.policies = PolicyStore(BarrierView(self.barrier, "sys/policy/"))
        self.wrapping = Wrapping(self)
        self.router = Router()
        self.mounts = MountTable(self)
        self.metrics = Metrics()
        self.pipeline = Pipeline(self)
        self.root_generation = make_root_generation(self)
        self.cluster_name = ""
        self.cluster_id = ""
        self.started_at = time.time()
        self._serving = False

    # -- lifecycle ------------------------------------------------------------

    @property
    def sealed(self) -> bool:
        """Sealed to clients until unseal has fully finished (mounts loaded),
        and during ``initialize``, which unseals only to write the first state."""
        return self.barrier.sealed or not self._serving

    async def initialized(self) -> bool:
        return await self.lifecycle.initialized()

    async def initialize(self, shares: int, threshold: int) -> InitOutput:
        keys_hex, keys_b64, root_key = await self.lifecycle.initialize(shares, threshold)
        try:
            await self._post_unseal(serve=False)
            root_token, _ = await self.tokens.create_root()
        finally:
            await self.seal()
        del root_key
        return InitOutput(keys_hex, keys_b64, root_token)

    async def unseal(self, key: str) -> SealStatus:
        if await self.lifecycle.submit_share(key):
            await self._post_unseal()
        return await self.seal_status()

    async def reset_unseal(self) -> SealStatus:
        if not await self.initialized():
            raise NotInitializedError()
        self.lifecycle.reset_progress()
        return await self.seal_status()

    async def seal(self) -> None:
        self._serving = False
        await self.expiration.stop()
        self.policies.invalidate()
        self.router.clear()
        self.tokens.forget_cached_salt()
        self.lifecycle.seal_barrier()
        self.metrics.unsealed.set(0)
        log.info("sealed", extra={"event": "core.sealed"})

    async def _post_unseal(self, serve: bool = True) -> None:
        cluster = await BarrierView(self.barrier, "core/").get_json("cluster")
        if cluster is None:
            cluster = {
                "name": self.settings.cluster_name or f"coffer-cluster-{new_cluster_id()[:8]}",
                "id": new_cluster_id(),
            }
            await BarrierView(self.barrier, "core/").put_json("cluster", cluster)
        self.cluster_name, self.cluster_id = cluster["name"], cluster["id"]
        await self.mounts.load()
        await self.policies.ensure_default()
        await self.expiration.start()
        self._serving = serve
        self.metrics.unsealed.set(1 if serve else 0)
        log.info("unsealed", extra={"event": "core.unsealed"})

    async def seal_status(self) -> SealStatus:
        config = await self.lifecycle.seal_config()
        progress = self.lifecycle.progress
        return SealStatus(
            type=config.type if config else "shamir",
            initialized=config is not None,
            sealed=self.sealed,
            threshold=config.secret_threshold if config else 0,
            shares=config.secret_shares if config else 0,
            progress=progress.progress if progress else 0,
            nonce=progress.nonce if progress else "",
            version=VERSION,
            cluster_name=self.cluster_name,
            cluster_id=self.cluster_id,
            storage_type=self.settings.storage_type,
        )

    async def dev_bootstrap(self, root_token_id: str = "") -> InitOutput:
        """Initialise with one share and unseal, as ``server -dev`` does."""
        output = await self.initialize(1, 1)
        await self.unseal(output.keys_hex[0])
        if root_token_id:
            if root_token_id != root_token_id.strip():
                raise InvalidRequestError("dev root token id may not have surrounding spaces")
            await self.tokens.revoke(output.root_token)
            await self.tokens.create_root_with_id(root_token_id)
            output = InitOutput(output.keys_hex, output.keys_base64, root_token_id)
        return output

    # -- requests -----------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        return await self.pipeline.handle(request)

    async def _destroy_cubbyhole(self, entry: TokenEntry) -> None:
        route = self.router.match("cubbyhole/")
        if entry.cubbyhole_id and route is not None and isinstance(route.backend, CubbyholeBackend):
            await route.backend.destroy(entry.cubbyhole_id)

    async def close(self) -> None:
        await self.physical.close()
