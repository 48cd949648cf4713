"""The ``identity/`` mount: the HTTP face of one namespace's identity store.

Building the backend registers its namespace's store with the core's
``IdentityService`` (creating the service on first use), so the store a
login links to is the one this mount's endpoints edit.
"""

from __future__ import annotations

from typing import Any

from node.barrier.view import BarrierView
from node.framework import FrameworkBackend
from node.identity.inputs import MountDirectory
from node.identity.paths_entity import EntityPaths
from node.identity.paths_group import GroupPaths
from node.identity.paths_lookup import LookupPaths
from node.identity.scope import Scope
from node.identity.service import IdentityService, SingleRootTree
from node.identity.store import IdentityStore
from node.namespaces.model import NamespaceTree
from node.routing.mounts import MountEntry

__all__ = ["IdentityBackend", "service_of"]


def _tree(core: Any) -> NamespaceTree:
    tree = getattr(core, "namespaces", None)
    if tree is not None and callable(getattr(tree, "ancestors", None)):
        found: NamespaceTree = tree
        return found
    return SingleRootTree()


def service_of(core: Any) -> IdentityService:
    """The core's identity service, created (over the core's namespace tree) if absent."""
    service = getattr(core, "identity", None)
    if service is None:
        service = IdentityService(_tree(core))
        core.identity = service
    if not isinstance(service, IdentityService):
        raise TypeError(f"core.identity is a {type(service).__name__}, not an IdentityService")
    return service


class IdentityBackend(FrameworkBackend):
    type = "identity"
    help_text = (
        "The identity store: entities (one per person or machine) joined to login names "
        "by aliases, and groups that grant their members policies."
    )

    def __init__(self, view: BarrierView, mount: MountEntry, core: Any) -> None:
        self.mount = mount
        self.store = IdentityStore(view, mount.namespace_id)
        self.service = service_of(core)
        self.service.register(mount.namespace_id, self.store)
        router = getattr(core, "router", None)
        mounts = MountDirectory(mount.namespace_id, router.entries if router is not None else None)
        scope = Scope(self.service, self.store, mounts)
        super().__init__(
            [
                *EntityPaths(scope).paths(),
                *GroupPaths(scope).paths(),
                *LookupPaths(scope).paths(),
            ]
        )
