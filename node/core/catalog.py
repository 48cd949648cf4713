"""Which factory builds a mount, and the config it is built with.

Engines and auth methods are built from their ``BackendConfig`` alone
(``node.engines.registry``). Three backends are the core's own faces and are
bound to it here: ``sys/`` and ``auth/token/`` (which act on the core's
state), and ``identity/``, whose stores join the node's one
``IdentityService`` (created with the first identity mount after an unseal).
Nothing outside ``node/core`` needs the core to build a backend.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from node.barrier.seal_wrap import SealWrapStorage
from node.barrier.view import BarrierView
from node.core.login import IdentityLink
from node.core.system.backend import SystemBackend
from node.core.system_view import CoreSystemView
from node.core.token_store.backend import TokenBackend
from node.engines.registry import factory_for
from node.identity.backend import IdentityBackend
from node.identity.service import IdentityService
from node.logical.backend import Backend, Factory
from node.logical.mount import MountEntry
from node.logical.system_view import BackendConfig
from node.namespaces.model import ROOT, Namespace

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["Catalog"]


class Catalog:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._bound: dict[str, Factory] = {
            "system": self._system,
            "token": self._token,
            "identity": self._identity,
        }

    def config_for(
        self, entry: MountEntry, storage: SealWrapStorage | None = None
    ) -> BackendConfig:
        """``storage``: what the mount's view sits on (the barrier, wrapping as the mount says)."""
        if storage is None:
            storage = self._storage(entry)
        return BackendConfig(
            storage=BarrierView(storage, entry.storage_prefix),
            mount=entry,
            system=CoreSystemView(self._core, entry),
            logger=logging.getLogger(f"coffer.backend.{entry.type}"),
        )

    def build(self, entry: MountEntry) -> Backend:
        """A new backend for ``entry``, set up (no I/O yet); 400 for an unknown type."""
        storage = self._storage(entry)
        config = self.config_for(entry, storage)
        factory = self._bound.get(entry.type) or factory_for(entry.type)
        backend = factory(config)
        storage.declare(backend.seal_wrap_storage)
        backend.setup(config)
        return backend

    def _storage(self, entry: MountEntry) -> SealWrapStorage:
        """Seal wrap takes effect only under an HSM seal (``Barrier.wrapper``)."""
        return SealWrapStorage(self._core.barrier, entry.storage_prefix, every=entry.seal_wrap)

    # -- the core's own backends ------------------------------------------------------

    def _system(self, config: BackendConfig) -> Backend:
        return SystemBackend(self._core, self._namespace_of(config))

    def _token(self, config: BackendConfig) -> Backend:
        return TokenBackend(self._core, self._namespace_of(config))

    def _identity(self, config: BackendConfig) -> Backend:
        service = self._core.identity
        if service is None:
            service = IdentityService(self._core.namespaces)
            self._core.identity = _as_link(service)
        if not isinstance(service, IdentityService):
            raise TypeError(f"core.identity is a {type(service).__name__}, not an IdentityService")
        return IdentityBackend(config, service)

    def _namespace_of(self, config: BackendConfig) -> Namespace:
        return self._core.namespaces.by_id(config.mount.namespace_id) or ROOT


def _as_link(service: IdentityService) -> IdentityLink:
    """The service is what logins and requests see of identity (checked by mypy here)."""
    return service
