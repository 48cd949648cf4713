"""``group``, ``group/id/*``, ``group/name/*``, ``group-alias`` and ``group-alias/id/*``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from node.framework import Field, FieldData, FieldType, Path
from node.identity import groups, views
from node.identity.groups import GroupAliasChange, GroupChange
from node.identity.inputs import metadata, policy_list, unique
from node.identity.paths_records import RecordPaths
from node.identity.records import Group, GroupAlias
from node.identity.scope import Scope
from node.identity.state import IdentityState
from node.logical.request import Request
from node.logical.response import Response
from sdk.errors import InvalidRequestError

__all__ = ["GroupPaths"]

_GROUP_FIELDS = {
    "id": Field(FieldType.STRING, "ID of the group. If set, updates the corresponding group."),
    "name": Field(FieldType.STRING, "Name of the group."),
    "type": Field(FieldType.STRING, "'internal' (default) or 'external'."),
    "metadata": Field(FieldType.ANY, "Key/value pairs (an object, or a list of 'key=value')."),
    "policies": Field(FieldType.COMMA_STRING_LIST, "Policies tied to the group."),
    "member_entity_ids": Field(FieldType.COMMA_STRING_LIST, "Entity IDs that are members."),
    "member_group_ids": Field(FieldType.COMMA_STRING_LIST, "Group IDs that are members."),
}
_ALIAS_FIELDS = {
    "id": Field(FieldType.STRING, "ID of the group alias. If set, updates that alias."),
    "name": Field(FieldType.STRING, "Name of the group in the external system."),
    "mount_accessor": Field(FieldType.STRING, "Accessor of the auth mount the alias belongs to."),
    "canonical_id": Field(FieldType.STRING, "ID of the (external) group the alias maps to."),
}


class GroupPaths:
    """The group paths, then the group-alias paths."""

    def __init__(self, scope: Scope) -> None:
        self._kinds = (_Groups(scope), _Aliases(scope))

    def paths(self) -> list[Path]:
        return [path for kind in self._kinds for path in kind.paths()]


class _Groups(RecordPaths[Group]):
    kind = "group"
    noun = "a group"
    fields = _GROUP_FIELDS
    write_summary = "Create a group, or update the one with the given id or name."
    list_summary = "List groups by id."
    named = True

    def _get(self, state: IdentityState, record_id: str) -> Group | None:
        return state.group(record_id)

    def _get_by_name(self, state: IdentityState, name: str) -> Group | None:
        return state.group_by_name(name)

    def _records(self, state: IdentityState) -> Iterable[Group]:
        return state.groups.values()

    async def _view(self, state: IdentityState, record: Group) -> dict[str, Any]:
        return await views.group_view(self._scope, state, record)

    async def _info(self, state: IdentityState, record: Group) -> dict[str, Any]:
        return await views.group_info(self._scope, state, record)

    async def _remove(self, record: Group) -> None:
        await groups.delete_group(self._scope, record)

    async def _write(self, request: Request, data: FieldData) -> Response | None:
        def listed(name: str) -> tuple[str, ...] | None:
            return unique(data.get(name)) if data.given(name) else None

        change = GroupChange(
            name=data.get("name") or "",
            type=data.get("type") if data.given("type") else None,
            policies=policy_list(data.get("policies")) if data.given("policies") else None,
            metadata=metadata(data.get("metadata")) if data.given("metadata") else None,
            member_entity_ids=listed("member_entity_ids"),
            member_group_ids=listed("member_group_ids"),
        )
        group, created = await groups.save_group(self._scope, change, data.get("id") or "")
        return Response(data={"id": group.id, "name": group.name}) if created else None


class _Aliases(RecordPaths[GroupAlias]):
    kind = "group-alias"
    noun = "a group alias"
    fields = _ALIAS_FIELDS
    write_summary = "Create a group alias, or update the one with the given id."
    list_summary = "List group aliases."

    def _get(self, state: IdentityState, record_id: str) -> GroupAlias | None:
        return state.group_alias(record_id)

    def _records(self, state: IdentityState) -> Iterable[GroupAlias]:
        return state.group_aliases.values()

    async def _view(self, state: IdentityState, record: GroupAlias) -> dict[str, Any]:
        return views.group_alias_view(record, self._scope.mounts)

    async def _info(self, state: IdentityState, record: GroupAlias) -> dict[str, Any]:
        return {
            "name": record.name,
            "canonical_id": record.canonical_id,
            "mount_accessor": record.mount_accessor,
            **self._scope.mounts.describe(record.mount_accessor),
        }

    async def _remove(self, record: GroupAlias) -> None:
        await groups.delete_group_alias(self._scope, record)

    async def _write(self, request: Request, data: FieldData) -> Response | None:
        state = await self._scope.store.state()
        existing = state.group_alias(data.get("id")) if data.given("id") else None
        if data.given("id") and existing is None:
            raise InvalidRequestError("invalid group alias ID")
        change = GroupAliasChange(
            name=data.get("name") or "",
            mount_accessor=data.get("mount_accessor") or "",
            canonical_id=data.get("canonical_id") or "",
        )
        alias = await groups.save_group_alias(self._scope, existing, change)
        if alias is None:
            return None
        return Response(data={"id": alias.id, "canonical_id": alias.canonical_id})
