"""The token store (``auth/token/``), as in the reference: create, look up,
renew, revoke, roles.

One backend per namespace's token mount; its table is the rows of its groups
(``paths_*``, ``roles``), each declaring its fields, operations and help.
Roles are the namespace's own, under its storage prefix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.barrier.view import BarrierView
from node.core.token_store.paths_create import CreatePaths
from node.core.token_store.paths_lookup import LookupPaths
from node.core.token_store.paths_renew import RenewPaths
from node.core.token_store.paths_revoke import RevokePaths
from node.core.token_store.resolve import TokenResolver
from node.core.token_store.roles import RolePaths, RoleStore
from node.framework import FrameworkBackend, PathGroup
from node.namespaces.model import ROOT, Namespace

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["TokenBackend"]


class TokenBackend(FrameworkBackend):
    type = "token"
    help_text = "The token store: create, look up, renew and revoke tokens; manage token roles."

    def __init__(self, core: Core, namespace: Namespace = ROOT) -> None:
        tokens = TokenResolver(core, namespace)
        roles = RoleStore(BarrierView(core.barrier, namespace.storage_prefix + "sys/token/"))
        groups: list[PathGroup] = [
            CreatePaths(core, namespace, tokens, roles),
            LookupPaths(core, tokens),
            RenewPaths(core, tokens),
            RevokePaths(core, tokens),
            RolePaths(roles),
        ]
        super().__init__([row for group in groups for row in group.paths()])
