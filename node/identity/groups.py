"""Group and group-alias changes made through the API, with the reference's checks.

Members may come from the group's namespace or namespaces below it (an
external group of a child namespace mapped into a parent's internal group).
Adding a member group that already contains this group, directly or
nested, is refused, so stored membership stays acyclic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from node.identity import graph
from node.identity.records import EXTERNAL, INTERNAL, Group, GroupAlias, Record, new_id, now
from node.identity.scope import Scope, without_member
from node.identity.service import generated_name
from node.identity.state import IdentityState
from sdk.errors import InvalidRequestError

__all__ = [
    "GroupAliasChange",
    "GroupChange",
    "delete_group",
    "delete_group_alias",
    "save_group",
    "save_group_alias",
]

_CYCLE = "cyclic relationship detected for member group ID"


@dataclass(frozen=True, slots=True)
class GroupChange:
    """Fields given in a write; ``None`` means "leave as is"."""

    name: str = ""
    type: str | None = None
    policies: tuple[str, ...] | None = None
    metadata: dict[str, str] | None = None
    member_entity_ids: tuple[str, ...] | None = None
    member_group_ids: tuple[str, ...] | None = None


async def save_group(scope: Scope, change: GroupChange, group_id: str = "") -> tuple[Group, bool]:
    """Create or update a group: by ``group_id``, else by name. Returns (group, created)."""

    async def save(state: IdentityState) -> tuple[Group, bool]:
        group = state.group(group_id) if group_id else None
        if group_id and group is None:
            raise InvalidRequestError("invalid group ID")
        if group is None and change.name:
            group = state.group_by_name(change.name)
        kind = change.type if change.type is not None else (group.type if group else INTERNAL)
        kind = kind or INTERNAL
        if group is not None and change.type is not None and change.type != group.type:
            raise InvalidRequestError("group type cannot be changed")
        if kind not in (INTERNAL, EXTERNAL):
            raise InvalidRequestError(f'invalid group type "{kind}"')
        if change.name:
            named = state.group_by_name(change.name)
            if named is not None and (group is None or named.id != group.id):
                raise InvalidRequestError("group name is already in use")
        created = group is None
        if group is None:
            group = _new_group(scope, state, change.name, kind, now())
        updates: dict[str, Any] = {"name": change.name or group.name}
        if change.policies is not None:
            updates["policies"] = change.policies
        if change.metadata is not None:
            updates["metadata"] = change.metadata
        if change.member_entity_ids is not None:
            if kind == EXTERNAL:
                raise InvalidRequestError(
                    "member entities can't be set manually for external groups"
                )
            updates["member_entity_ids"] = await _entities(scope, change.member_entity_ids)
        if change.member_group_ids is not None:
            if kind == EXTERNAL:
                raise InvalidRequestError("member groups can't be set for external groups")
            updates["member_group_ids"] = await _member_groups(
                scope, group, change.member_group_ids
            )
        group = group.touched(**updates)
        await scope.store.commit([group])
        return group, created

    return await scope.store.run(save)


def _new_group(scope: Scope, state: IdentityState, name: str, kind: str, stamp: str) -> Group:
    """A new group of this namespace, named ``name`` or a generated name."""
    return Group(
        id=new_id(),
        name=name or generated_name("group", state),
        namespace_id=scope.namespace_id,
        type=EXTERNAL if kind == EXTERNAL else INTERNAL,
        creation_time=stamp,
        last_update_time=stamp,
    )


async def _entities(scope: Scope, ids: tuple[str, ...]) -> tuple[str, ...]:
    states = await scope.service.states_within(scope.namespace_id)
    for entity_id in ids:
        if not any(state.entity(entity_id) is not None for state in states):
            raise InvalidRequestError(f'invalid entity ID "{entity_id}"')
    return ids


async def _member_groups(scope: Scope, group: Group, ids: tuple[str, ...]) -> tuple[str, ...]:
    for member_id in ids:
        if member_id == group.id:
            raise InvalidRequestError(
                f'member group ID "{member_id}" is same as the ID of the group'
            )
        if await graph.find_group(scope.service, member_id, scope.namespace_id) is None:
            raise InvalidRequestError(f'invalid member group ID "{member_id}"')
        if member_id not in group.member_group_ids and await graph.reaches(
            scope.service, member_id, group.id
        ):
            raise InvalidRequestError(f'{_CYCLE} "{member_id}"')
    return ids


async def delete_group(scope: Scope, group: Group) -> None:
    """Delete the group and its alias; parent groups stop listing it."""

    async def delete(state: IdentityState) -> None:
        current = state.group(group.id)
        if current is None:
            return
        alias = state.group_alias(current.alias_id) if current.alias_id else None
        parents = without_member(state, group_id=current.id)
        await scope.store.commit(parents, [current, *([alias] if alias else [])])

    await scope.store.run(delete)
    await scope.forget_in_ancestors(group_id=group.id)


@dataclass(frozen=True, slots=True)
class GroupAliasChange:
    name: str = ""
    mount_accessor: str = ""
    canonical_id: str = ""


async def save_group_alias(
    scope: Scope, existing: GroupAlias | None, change: GroupAliasChange
) -> GroupAlias | None:
    """Create or update a group alias; ``None`` when nothing changed.

    A new alias without ``canonical_id`` gets a new external group, as in the
    reference; a group given one loses the alias it had.
    """

    async def save(state: IdentityState) -> GroupAlias | None:
        alias = state.group_alias(existing.id) if existing is not None else None
        if existing is not None and alias is None:
            raise InvalidRequestError("invalid group alias ID")
        if not change.name:
            raise InvalidRequestError("missing alias name")
        if not change.mount_accessor:
            raise InvalidRequestError("missing mount_accessor")
        unchanged = alias is not None and (alias.name, alias.mount_accessor) == (
            change.name,
            change.mount_accessor,
        )
        if unchanged and change.canonical_id in ("", alias.canonical_id if alias else ""):
            return None
        target = None
        if change.canonical_id:
            target = state.group(change.canonical_id)
            if target is None:
                raise InvalidRequestError("invalid group ID given in 'canonical_id'")
            if target.type != EXTERNAL:
                raise InvalidRequestError("alias can't be set on an internal group")
        scope.mounts.require(change.mount_accessor, allow_local=False)
        taken = state.group_alias_by_factors(change.mount_accessor, change.name)
        if taken is not None and (alias is None or taken.id != alias.id):
            raise InvalidRequestError("combination of mount and group alias name is already in use")
        return await _commit_group_alias(scope, state, alias, target, change)

    return await scope.store.run(save)


async def _commit_group_alias(
    scope: Scope,
    state: IdentityState,
    alias: GroupAlias | None,
    target: Group | None,
    change: GroupAliasChange,
) -> GroupAlias:
    stamp = now()
    previous = state.group(alias.canonical_id) if alias is not None else None
    if target is None:
        target = previous
    if target is None:
        target = _new_group(scope, state, "", EXTERNAL, stamp)
    if alias is None:
        alias = GroupAlias(
            new_id(),
            change.name,
            change.mount_accessor,
            target.id,
            scope.namespace_id,
            stamp,
            stamp,
        )
    else:
        alias = alias.touched(
            name=change.name, mount_accessor=change.mount_accessor, canonical_id=target.id
        )
    puts: list[Record] = [alias]
    deletes: list[Record] = []
    if previous is not None and previous.id != target.id:
        puts.append(previous.touched(alias_id=""))
    replaced = state.group_alias(target.alias_id) if target.alias_id not in ("", alias.id) else None
    if replaced is not None:
        deletes.append(replaced)
    puts.append(target.touched(alias_id=alias.id))
    await scope.store.commit(puts, deletes)
    return alias


async def delete_group_alias(scope: Scope, alias: GroupAlias) -> None:
    async def delete(state: IdentityState) -> None:
        current = state.group_alias(alias.id)
        if current is None:
            return
        group = state.group(current.canonical_id)
        puts: list[Record] = [group.touched(alias_id="")] if group is not None else []
        await scope.store.commit(puts, [current])

    await scope.store.run(delete)
