"""The identity subsystem as the core sees it: per-namespace stores and login linking.

One ``IdentityStore`` per namespace is registered here by that namespace's
``identity/`` mount. Logins link their alias to an entity through
``link_login``; every request of a token with an entity asks
``policies_for`` (and the template values), computed from the cached records
at that moment, so group and entity changes apply to existing tokens on
their next request.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace

from node.identity import graph
from node.identity.graph import IdentityPolicies
from node.identity.records import EXTERNAL, Entity, EntityAlias, Group, Record, new_id, now
from node.identity.state import IdentityState, fold
from node.identity.store import IdentityStore
from node.logical.mount import MountEntry
from node.logical.response import Login
from node.namespaces.model import Namespace, NamespaceTree

__all__ = ["IdentityPolicies", "IdentityService", "SingleRootTree", "generated_name"]

log = logging.getLogger("coffer.identity")


class SingleRootTree:
    """The namespace tree of a server without namespaces: root only."""

    def by_id(self, namespace_id: str) -> Namespace | None:
        return Namespace(namespace_id, "") if namespace_id == "root" else None

    def ancestors(self, namespace_id: str) -> list[Namespace]:
        found = self.by_id(namespace_id)
        return [found] if found is not None else []


def generated_name(kind: str, taken: IdentityState) -> str:
    """``entity_1a2b3c4d`` / ``group_...``: random, and free in this namespace."""
    while True:
        name = f"{kind}_{secrets.token_hex(4)}"
        existing = taken.entity_by_name(name) if kind == "entity" else taken.group_by_name(name)
        if existing is None:
            return name


class IdentityService:
    """Registry of namespace stores; implements the core's ``IdentityLink`` (checked
    where the core binds it, ``node.core.catalog``)."""

    def __init__(self, tree: NamespaceTree) -> None:
        self.tree = tree
        self._stores: dict[str, IdentityStore] = {}

    # -- registry --------------------------------------------------------------

    def register(self, namespace_id: str, store: IdentityStore) -> None:
        """Add (or replace, after an unseal or remount) a namespace's store."""
        self._stores[namespace_id] = store

    def unregister(self, namespace_id: str) -> None:
        self._stores.pop(namespace_id, None)

    def store(self, namespace_id: str) -> IdentityStore | None:
        return self._stores.get(namespace_id)

    def namespace_ids(self) -> list[str]:
        return sorted(self._stores)

    # -- namespace geometry ----------------------------------------------------

    def chain(self, namespace_id: str) -> list[str]:
        """Ids of the namespace's ancestors, root first, ending with itself."""
        ids = [ns.id for ns in self.tree.ancestors(namespace_id)]
        return ids if ids and ids[-1] == namespace_id else [*ids, namespace_id]

    def is_within(self, inner: str, outer: str) -> bool:
        """Whether namespace ``inner`` is ``outer`` or below it."""
        return outer in self.chain(inner)

    async def states(self, namespace_ids: list[str]) -> list[IdentityState]:
        """The loaded state of each registered namespace among ``namespace_ids``."""
        found = []
        for namespace_id in namespace_ids:
            store = self._stores.get(namespace_id)
            if store is not None:
                found.append(await store.state())
        return found

    async def states_within(self, namespace_id: str) -> list[IdentityState]:
        """States of ``namespace_id`` and every registered namespace below it."""
        inside = [ns for ns in self.namespace_ids() if self.is_within(ns, namespace_id)]
        return await self.states(inside)

    # -- IdentityLink ----------------------------------------------------------

    async def link_login(self, namespace_id: str, mount: MountEntry, login: Login) -> str:
        """The entity id of the login's alias, creating entity and alias on first login.

        Also refreshes the alias metadata and the entity's membership of the
        external groups mapped (by group alias) on this mount.
        """
        store = self._stores.get(namespace_id)
        if store is None or not login.alias_name:
            log.warning("login not linked to an identity", extra={"namespace": namespace_id})
            return ""

        async def link(state: IdentityState) -> str:
            entity_id, puts = _login_plan(state, namespace_id, mount, login)
            if puts:
                await store.commit(puts)
            return entity_id

        return await store.run(link)

    async def linked_entity(self, namespace_id: str, mount: MountEntry, login: Login) -> str | None:
        """The entity id ``link_login`` would answer when it would write nothing (the
        alias and entity exist and are current), else None: a performance secondary
        then has the primary link the login (identity is replicated data)."""
        store = self._stores.get(namespace_id)
        if store is None or not login.alias_name:
            return ""
        entity_id, puts = _login_plan(await store.state(), namespace_id, mount, login)
        return None if puts else entity_id

    async def policies_for(self, entity_id: str, namespace_id: str) -> IdentityPolicies:
        """Policies the entity gets now: its own, and its groups' (directly or nested).

        Policies of groups in ``namespace_id`` are ``identity_policies``;
        those of groups in other namespaces (ancestors) are
        ``external_namespace_policies`` keyed by namespace id. A disabled or
        unknown entity gets none.
        """
        entity = await self.entity(entity_id, namespace_id)
        if entity is None or entity.disabled:
            return IdentityPolicies([], {})
        return await graph.policies(self, entity, namespace_id)

    # -- other per-request questions -------------------------------------------

    async def entity(self, entity_id: str, namespace_id: str) -> Entity | None:
        store = self._stores.get(namespace_id)
        if store is None or not entity_id:
            return None
        return (await store.state()).entity(entity_id)

    async def is_disabled(self, entity_id: str, namespace_id: str) -> bool:
        """Whether the entity exists and is disabled (its tokens must be refused)."""
        entity = await self.entity(entity_id, namespace_id)
        return entity is not None and entity.disabled

    async def template_values(self, entity_id: str, namespace_id: str) -> dict[str, str]:
        """Selector -> value for ``render_templates`` (empty for no or a disabled entity)."""
        entity = await self.entity(entity_id, namespace_id)
        if entity is None or entity.disabled:
            return {}
        return await graph.template_values(self, entity)

    async def memberships(self, entity: Entity) -> tuple[list[Group], list[Group]]:
        """The entity's direct groups and the groups it inherits through them."""
        return await graph.memberships(self, entity)


def _login_plan(
    state: IdentityState, namespace_id: str, mount: MountEntry, login: Login
) -> tuple[str, list[Record]]:
    """The login's entity id and the records to write for it (none when current)."""
    puts: list[Record] = []
    alias = state.alias_by_factors(mount.accessor, login.alias_name)
    entity = state.entity(alias.canonical_id) if alias is not None else None
    if alias is None or entity is None:
        stamp = now()
        entity = Entity(
            id=new_id(),
            name=generated_name("entity", state),
            namespace_id=namespace_id,
            creation_time=stamp,
            last_update_time=stamp,
        )
        alias = alias or EntityAlias(
            id=new_id(),
            name=login.alias_name,
            canonical_id=entity.id,
            mount_accessor=mount.accessor,
            namespace_id=namespace_id,
            mount_type=mount.type,
            metadata=dict(login.alias_metadata),
            creation_time=stamp,
            last_update_time=stamp,
        )
        alias = replace(alias, canonical_id=entity.id)
        entity = replace(entity, alias_ids=(alias.id,))
        puts += [entity, alias]
    elif alias.metadata != login.alias_metadata or alias.mount_type != mount.type:
        puts.append(alias.touched(metadata=dict(login.alias_metadata), mount_type=mount.type))
    puts += _external_memberships(state, entity.id, mount.accessor, login.group_aliases)
    return entity.id, puts


def _external_memberships(
    state: IdentityState, entity_id: str, mount_accessor: str, group_names: list[str]
) -> list[Record]:
    """External groups mapped on this mount, with the entity added or removed.

    Membership follows the login exactly: a member of each group whose alias
    name is among ``group_names``, and of no other group mapped on this mount.
    """
    wanted = {fold(name) for name in group_names}
    changed: list[Record] = []
    for alias in sorted(state.group_aliases.values(), key=lambda a: a.id):
        group = state.group(alias.canonical_id)
        if alias.mount_accessor != mount_accessor or group is None or group.type != EXTERNAL:
            continue
        member = entity_id in group.member_entity_ids
        if fold(alias.name) in wanted and not member:
            changed.append(group.touched(member_entity_ids=(*group.member_entity_ids, entity_id)))
        elif fold(alias.name) not in wanted and member:
            kept = tuple(m for m in group.member_entity_ids if m != entity_id)
            changed.append(group.touched(member_entity_ids=kept))
    return changed
