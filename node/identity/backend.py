"""The ``identity/`` mount: the HTTP face of one namespace's identity store.

The node's ``IdentityService`` is handed in by whoever builds the mount (the
core's catalog binds its own), and building the backend registers its
namespace's store there, so the store a login links to is the one this
mount's endpoints edit.
"""

from __future__ import annotations

from node.framework import FrameworkBackend
from node.identity.inputs import MountDirectory
from node.identity.paths_entity import EntityPaths
from node.identity.paths_group import GroupPaths
from node.identity.paths_lookup import LookupPaths
from node.identity.scope import Scope
from node.identity.service import IdentityService
from node.identity.store import IdentityStore
from node.logical.system_view import BackendConfig

__all__ = ["IdentityBackend"]


class IdentityBackend(FrameworkBackend):
    type = "identity"
    help_text = (
        "The identity store: entities (one per person or machine) joined to login names "
        "by aliases, and groups that grant their members policies."
    )

    def __init__(self, config: BackendConfig, service: IdentityService) -> None:
        self.mount = config.mount
        self.store = IdentityStore(config.storage, self.mount.namespace_id)
        self.service = service
        self.service.register(self.mount.namespace_id, self.store)
        mounts = MountDirectory(self.mount.namespace_id, config.system.mounts)
        scope = Scope(self.service, self.store, mounts)
        super().__init__(
            [
                *EntityPaths(scope).paths(),
                *GroupPaths(scope).paths(),
                *LookupPaths(scope).paths(),
            ]
        )

    def invalidate(self, key: str) -> None:
        """Another node changed this namespace's identity records: reload them on next use."""
        self.store.invalidate()
