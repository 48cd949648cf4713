"""Entity and entity-alias changes made through the API, with the reference's checks.

Each function is one ``store.run`` operation: it validates against the
cached records and commits one transaction, so a conflicting concurrent
write makes it re-validate rather than overwrite. Messages are the
reference's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from node.identity.records import Entity, EntityAlias, Record, new_id, now
from node.identity.scope import Scope, without_member
from node.identity.service import generated_name
from node.identity.state import IdentityState
from sdk.errors import InvalidRequestError

__all__ = [
    "AliasChange",
    "EntityChange",
    "delete_alias",
    "delete_entity",
    "save_alias",
    "save_entity",
]


@dataclass(frozen=True, slots=True)
class EntityChange:
    """Fields given in a write; ``None`` means "leave as is"."""

    entity_id: str = ""
    name: str = ""
    policies: tuple[str, ...] | None = None
    metadata: dict[str, str] | None = None
    disabled: bool | None = None


async def save_entity(scope: Scope, change: EntityChange) -> tuple[Entity, bool]:
    """Create or update an entity: by id, else by name. Returns (entity, created)."""

    async def save(state: IdentityState) -> tuple[Entity, bool]:
        entity = None
        if change.entity_id:
            entity = state.entity(change.entity_id)
            if entity is None:
                raise InvalidRequestError("entity not found from id")
        if change.name:
            named = state.entity_by_name(change.name)
            if named is not None and entity is None:
                entity = named
            elif named is not None and entity is not None and named.id != entity.id:
                raise InvalidRequestError("entity name is already in use")
        created = entity is None
        if entity is None:
            entity = _new_entity(scope, state, change.name, now())
        updates: dict[str, Any] = {"name": change.name or entity.name}
        for field in ("policies", "metadata", "disabled"):
            if getattr(change, field) is not None:
                updates[field] = getattr(change, field)
        entity = entity.touched(**updates)
        await scope.store.commit([entity])
        return entity, created

    return await scope.store.run(save)


def _new_entity(scope: Scope, state: IdentityState, name: str, stamp: str) -> Entity:
    """A new entity of this namespace, named ``name`` or a generated name."""
    return Entity(
        id=new_id(),
        name=name or generated_name("entity", state),
        namespace_id=scope.namespace_id,
        creation_time=stamp,
        last_update_time=stamp,
    )


async def delete_entity(scope: Scope, entity: Entity) -> None:
    """Delete the entity, its aliases, and its memberships (here and in parent namespaces)."""

    async def delete(state: IdentityState) -> None:
        current = state.entity(entity.id)
        if current is None:
            return
        groups = without_member(state, entity_id=current.id)
        await scope.store.commit(groups, [current, *state.aliases_of(current)])

    await scope.store.run(delete)
    await scope.forget_in_ancestors(entity_id=entity.id)


@dataclass(frozen=True, slots=True)
class AliasChange:
    alias_id: str = ""
    name: str = ""
    mount_accessor: str = ""
    canonical_id: str = ""
    custom_metadata: dict[str, str] | None = None


async def save_alias(scope: Scope, change: AliasChange) -> EntityAlias | None:
    """Create or update an entity alias; ``None`` when nothing changed."""

    async def save(state: IdentityState) -> EntityAlias | None:
        if change.alias_id:
            alias = state.alias(change.alias_id)
            if alias is None:
                raise InvalidRequestError("invalid alias ID provided")
            given = change.mount_accessor or change.name or change.canonical_id
            if not given and change.custom_metadata is None:
                return None
            return await _update_alias(scope, state, alias, change)
        if not change.mount_accessor or not change.name:
            raise InvalidRequestError("'id' or 'mount_accessor' and 'name' must be provided")
        scope.mounts.require(change.mount_accessor)
        existing = state.alias_by_factors(change.mount_accessor, change.name)
        if existing is not None:
            return await _update_alias(scope, state, existing, change)
        return await _create_alias(scope, state, change)

    return await scope.store.run(save)


async def _create_alias(scope: Scope, state: IdentityState, change: AliasChange) -> EntityAlias:
    stamp = now()
    if change.canonical_id:
        entity = state.entity(change.canonical_id)
        if entity is None:
            raise InvalidRequestError("invalid canonical ID")
    else:
        entity = _new_entity(scope, state, "", stamp)
    if any(a.mount_accessor == change.mount_accessor for a in state.aliases_of(entity)):
        raise InvalidRequestError("Alias already exists for requested entity and mount accessor")
    mount = scope.mounts.find(change.mount_accessor)
    alias = EntityAlias(
        id=new_id(),
        name=change.name,
        canonical_id=entity.id,
        mount_accessor=change.mount_accessor,
        namespace_id=scope.namespace_id,
        mount_type=mount.type if mount is not None else "",
        custom_metadata=dict(change.custom_metadata or {}),
        creation_time=stamp,
        last_update_time=stamp,
    )
    await scope.store.commit([entity.touched(alias_ids=(*entity.alias_ids, alias.id)), alias])
    return alias


async def _update_alias(
    scope: Scope, state: IdentityState, alias: EntityAlias, change: AliasChange
) -> EntityAlias | None:
    name = change.name or alias.name
    accessor = change.mount_accessor or alias.mount_accessor
    custom = alias.custom_metadata if change.custom_metadata is None else change.custom_metadata
    target = change.canonical_id or alias.canonical_id
    if (name, accessor, target, custom) == (
        alias.name,
        alias.mount_accessor,
        alias.canonical_id,
        alias.custom_metadata,
    ):
        return None
    current = state.entity(alias.canonical_id)
    if current is None:
        raise InvalidRequestError("given alias is not associated with an entity")
    if accessor != alias.mount_accessor:
        mount = scope.mounts.require(accessor)
        taken = state.alias_by_factors(accessor, name)
        if target == current.id and any(
            a.mount_accessor == accessor for a in state.aliases_of(current)
        ):
            raise InvalidRequestError(
                "Alias cannot be updated as the entity already has an alias for the given "
                "'mount_accessor' "
            )
    else:
        mount = scope.mounts.find(accessor)
        taken = state.alias_by_factors(accessor, name)
    if taken is not None and taken.id != alias.id:
        raise InvalidRequestError(
            "alias with combination of mount accessor and name already exists"
        )
    updated = alias.touched(
        name=name,
        mount_accessor=accessor,
        custom_metadata=dict(custom),
        canonical_id=target,
        mount_type=mount.type if mount is not None else alias.mount_type,
    )
    puts: list[Record] = [updated]
    if target != current.id:
        moved_to = state.entity(target)
        if moved_to is None:
            raise InvalidRequestError("given 'canonical_id' is not associated with an entity")
        if any(a.mount_accessor == accessor for a in state.aliases_of(moved_to)):
            raise InvalidRequestError(
                "Alias cannot be updated as the given entity already has an alias for this mount "
            )
        kept = tuple(a for a in current.alias_ids if a != alias.id)
        puts += [
            current.touched(alias_ids=kept),
            moved_to.touched(alias_ids=(*moved_to.alias_ids, alias.id)),
        ]
    await scope.store.commit(puts)
    return updated


async def delete_alias(scope: Scope, alias: EntityAlias) -> None:
    async def delete(state: IdentityState) -> None:
        current = state.alias(alias.id)
        if current is None:
            return
        entity = state.entity(current.canonical_id)
        puts: list[Record] = []
        if entity is not None:
            puts.append(
                entity.touched(alias_ids=tuple(a for a in entity.alias_ids if a != alias.id))
            )
        await scope.store.commit(puts, [current])

    await scope.store.run(delete)
