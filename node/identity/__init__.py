"""Identity: entities, aliases and groups, per namespace.

``IdentityService`` is what the core uses (login linking, identity policies,
template values); ``IdentityBackend`` is the ``identity/`` mount that edits
one namespace's ``IdentityStore``.
"""

from node.identity.graph import IdentityPolicies
from node.identity.records import Entity, EntityAlias, Group, GroupAlias
from node.identity.service import IdentityService, SingleRootTree
from node.identity.store import IdentityStore

__all__ = [
    "Entity",
    "EntityAlias",
    "Group",
    "GroupAlias",
    "IdentityPolicies",
    "IdentityService",
    "IdentityStore",
    "SingleRootTree",
]
