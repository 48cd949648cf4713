"""The reference's read and list shapes for entities, groups and their aliases.

Derived fields (an entity's groups, a group's parents, mount type and path)
are computed at read time from the current records and mounts, never stored.
"""

from __future__ import annotations

from typing import Any

from node.identity import graph
from node.identity.inputs import MountDirectory
from node.identity.records import Entity, EntityAlias, Group, GroupAlias
from node.identity.scope import Scope
from node.identity.state import IdentityState

__all__ = [
    "alias_info",
    "alias_view",
    "entity_info",
    "entity_view",
    "group_alias_view",
    "group_info",
    "group_view",
]


def alias_view(alias: EntityAlias, mounts: MountDirectory) -> dict[str, Any]:
    return {
        "id": alias.id,
        "canonical_id": alias.canonical_id,
        "mount_accessor": alias.mount_accessor,
        "metadata": dict(alias.metadata),
        "custom_metadata": dict(alias.custom_metadata),
        "name": alias.name,
        "merged_from_canonical_ids": None,
        "namespace_id": alias.namespace_id,
        "local": False,
        "creation_time": alias.creation_time,
        "last_update_time": alias.last_update_time,
        **mounts.describe(alias.mount_accessor),
    }


async def entity_view(scope: Scope, state: IdentityState, entity: Entity) -> dict[str, Any]:
    direct, inherited = await graph.memberships(scope.service, entity)
    direct_ids = [g.id for g in direct]
    inherited_ids = [g.id for g in inherited]
    return {
        "id": entity.id,
        "name": entity.name,
        "metadata": dict(entity.metadata),
        "merged_entity_ids": None,
        "policies": list(entity.policies),
        "disabled": entity.disabled,
        "namespace_id": entity.namespace_id,
        "creation_time": entity.creation_time,
        "last_update_time": entity.last_update_time,
        "aliases": [alias_view(a, scope.mounts) for a in state.aliases_of(entity)],
        "direct_group_ids": direct_ids,
        "inherited_group_ids": inherited_ids,
        "group_ids": direct_ids + inherited_ids,
    }


def entity_info(state: IdentityState, entity: Entity, mounts: MountDirectory) -> dict[str, Any]:
    info: dict[str, Any] = {"name": entity.name}
    aliases = state.aliases_of(entity)
    if aliases:
        info["aliases"] = [
            {
                "id": a.id,
                "name": a.name,
                "mount_accessor": a.mount_accessor,
                **mounts.describe(a.mount_accessor),
            }
            for a in aliases
        ]
    return info


def alias_info(alias: EntityAlias, mounts: MountDirectory) -> dict[str, Any]:
    return {
        "name": alias.name,
        "canonical_id": alias.canonical_id,
        "mount_accessor": alias.mount_accessor,
        "custom_metadata": dict(alias.custom_metadata),
        "metadata": dict(alias.metadata),
        "local": False,
        **mounts.describe(alias.mount_accessor),
    }


def group_alias_view(alias: GroupAlias, mounts: MountDirectory) -> dict[str, Any]:
    return {
        "id": alias.id,
        "canonical_id": alias.canonical_id,
        "mount_accessor": alias.mount_accessor,
        "metadata": None,
        "name": alias.name,
        "merged_from_canonical_ids": None,
        "namespace_id": alias.namespace_id,
        "creation_time": alias.creation_time,
        "last_update_time": alias.last_update_time,
        **mounts.describe(alias.mount_accessor),
    }


async def group_view(scope: Scope, state: IdentityState, group: Group) -> dict[str, Any]:
    alias = state.group_alias(group.alias_id) if group.alias_id else None
    parents = await graph.parent_groups(scope.service, group)
    return {
        "id": group.id,
        "name": group.name,
        "policies": list(group.policies),
        "member_entity_ids": list(group.member_entity_ids),
        "member_group_ids": list(group.member_group_ids),
        "parent_group_ids": [g.id for g in parents],
        "metadata": dict(group.metadata),
        "creation_time": group.creation_time,
        "last_update_time": group.last_update_time,
        "modify_index": group.modify_index,
        "type": group.type,
        "namespace_id": group.namespace_id,
        "alias": group_alias_view(alias, scope.mounts) if alias is not None else {},
    }


async def group_info(scope: Scope, state: IdentityState, group: Group) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": group.name,
        "num_member_entities": len(group.member_entity_ids),
        "num_parent_groups": len(await graph.parent_groups(scope.service, group)),
    }
    alias = state.group_alias(group.alias_id) if group.alias_id else None
    if alias is not None:
        info["alias"] = {
            "id": alias.id,
            "name": alias.name,
            "mount_accessor": alias.mount_accessor,
            **scope.mounts.describe(alias.mount_accessor),
        }
    return info
