"""Group membership across namespaces: inheritance, policies, cycles and templates.

A group lists its child groups in ``member_group_ids``; members of a child
inherit the parent's policies. A group may list members from its own
namespace or from namespaces below it, so the groups that can contain an
entity live in the entity's namespace and its ancestors. Every walk keeps a
visited set, so a cycle in stored data (another node's concurrent write)
cannot loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from node.identity.records import Entity, Group

if TYPE_CHECKING:
    from node.identity.service import IdentityService

__all__ = [
    "IdentityPolicies",
    "find_group",
    "group_anywhere",
    "memberships",
    "parent_groups",
    "policies",
    "reaches",
    "template_values",
]


@dataclass(slots=True)
class IdentityPolicies:
    """The core's ``PolicySet``: policies from the token's namespace and from others."""

    identity_policies: list[str]
    external_namespace_policies: dict[str, list[str]]


async def find_group(service: IdentityService, group_id: str, within: str) -> Group | None:
    """The group with this id in namespace ``within`` or below it."""
    for state in await service.states_within(within):
        found = state.group(group_id)
        if found is not None:
            return found
    return None


async def parent_groups(service: IdentityService, group: Group) -> list[Group]:
    """Groups (in the group's namespace or above) that list ``group`` as a member."""
    found: list[Group] = []
    for state in await service.states(service.chain(group.namespace_id)):
        found.extend(state.parents_of(group.id))
    return found


async def memberships(service: IdentityService, entity: Entity) -> tuple[list[Group], list[Group]]:
    """(direct groups, inherited groups) of ``entity``, each without repeats."""
    direct: list[Group] = []
    for state in await service.states(service.chain(entity.namespace_id)):
        direct.extend(state.groups_with_entity(entity.id))
    seen = {group.id for group in direct}
    inherited: list[Group] = []
    pending = list(direct)
    while pending:
        for parent in await parent_groups(service, pending.pop()):
            if parent.id not in seen:
                seen.add(parent.id)
                inherited.append(parent)
                pending.append(parent)
    return direct, inherited


async def policies(service: IdentityService, entity: Entity, namespace_id: str) -> IdentityPolicies:
    by_namespace: dict[str, set[str]] = {entity.namespace_id: set(entity.policies)}
    direct, inherited = await memberships(service, entity)
    for group in (*direct, *inherited):
        by_namespace.setdefault(group.namespace_id, set()).update(group.policies)
    own = sorted(by_namespace.pop(namespace_id, set()))
    external = {ns: sorted(names) for ns, names in sorted(by_namespace.items()) if names}
    return IdentityPolicies(own, external)


async def reaches(service: IdentityService, start: str, target: str) -> bool:
    """Whether ``target`` is ``start`` or a (nested) member group of it."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        group_id = pending.pop()
        if group_id == target:
            return True
        if group_id in seen:
            continue
        seen.add(group_id)
        group = await group_anywhere(service, group_id)
        if group is not None:
            pending.extend(group.member_group_ids)
    return False


async def group_anywhere(service: IdentityService, group_id: str) -> Group | None:
    """The group with this id in any registered namespace."""
    for state in await service.states(service.namespace_ids()):
        found = state.group(group_id)
        if found is not None:
            return found
    return None


async def template_values(service: IdentityService, entity: Entity) -> dict[str, str]:
    """The flat selector map ``node.policy.templates.render_templates`` reads.

    Groups of the entity's own namespace win when a name is used by groups of
    several namespaces.
    """
    values = {"identity.entity.id": entity.id, "identity.entity.name": entity.name}
    values.update({f"identity.entity.metadata.{k}": v for k, v in entity.metadata.items()})
    state = await service.states([entity.namespace_id])
    for alias in state[0].aliases_of(entity) if state else []:
        prefix = f"identity.entity.aliases.{alias.mount_accessor}"
        values[f"{prefix}.id"] = alias.id
        values[f"{prefix}.name"] = alias.name
        values.update({f"{prefix}.metadata.{k}": v for k, v in alias.metadata.items()})
        values.update(
            {f"{prefix}.custom_metadata.{k}": v for k, v in alias.custom_metadata.items()}
        )
    direct, inherited = await memberships(service, entity)
    groups = sorted((*direct, *inherited), key=lambda g: g.namespace_id == entity.namespace_id)
    for group in groups:
        for prefix in (f"identity.groups.ids.{group.id}", f"identity.groups.names.{group.name}"):
            values[f"{prefix}.id"] = group.id
            values[f"{prefix}.name"] = group.name
            values.update({f"{prefix}.metadata.{k}": v for k, v in group.metadata.items()})
    return values
