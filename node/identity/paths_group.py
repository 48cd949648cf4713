"""``group``, ``group/id/*``, ``group/name/*``, ``group-alias`` and ``group-alias/id/*``."""

from __future__ import annotations

from node.errors import InvalidRequestError, UnsupportedPathError
from node.framework import Field, FieldData, FieldType, Path
from node.identity import groups, views
from node.identity.groups import GroupAliasChange, GroupChange
from node.identity.inputs import metadata, policy_list, unique
from node.identity.records import Group
from node.identity.scope import Scope
from node.logical.request import Operation, Request
from node.logical.response import Response

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
_BY_ID = "group/id/(?P<id>[^/]+)"


class GroupPaths:
    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def paths(self) -> list[Path]:
        one = {
            Operation.READ: self._read,
            Operation.UPDATE: self._write,
            Operation.DELETE: self._delete,
        }
        return [
            Path(
                r"group",
                {Operation.UPDATE: self._write},
                _GROUP_FIELDS,
                summary="Create a group, or update the one with the given id or name.",
            ),
            Path(r"group/id/?", {Operation.LIST: self._list_ids}, summary="List groups by id."),
            Path(r"group/name/?", {Operation.LIST: self._list_names}, summary="List group names."),
            Path(_BY_ID, one, _GROUP_FIELDS, summary="Read, update or delete a group by id."),
            Path(
                r"group/name/(?P<name>.+)",
                one,
                _GROUP_FIELDS,
                summary="Read, create or update, or delete a group by name.",
            ),
            Path(
                r"group-alias",
                {Operation.UPDATE: self._write_alias},
                _ALIAS_FIELDS,
                summary="Create a group alias, or update the one with the given id.",
            ),
            Path(
                r"group-alias/id/?",
                {Operation.LIST: self._list_aliases},
                summary="List group aliases.",
            ),
            Path(
                r"group-alias/id/(?P<id>[^/]+)",
                {
                    Operation.READ: self._read_alias,
                    Operation.UPDATE: self._write_alias,
                    Operation.DELETE: self._delete_alias,
                },
                _ALIAS_FIELDS,
                summary="Read, update or delete a group alias by id.",
            ),
        ]

    # -- groups ----------------------------------------------------------------

    async def _find(self, data: FieldData) -> Group | None:
        state = await self._scope.store.state()
        if data.given("id"):
            return state.group(data.get("id"))
        return state.group_by_name(data.get("name") or "")

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

    async def _read(self, request: Request, data: FieldData) -> Response:
        group = await self._find(data)
        if group is None:
            raise UnsupportedPathError()
        state = await self._scope.store.state()
        return Response(data=await views.group_view(self._scope, state, group))

    async def _delete(self, request: Request, data: FieldData) -> None:
        group = await self._find(data)
        if group is not None:
            await groups.delete_group(self._scope, group)

    async def _list_ids(self, request: Request, data: FieldData) -> Response:
        return await self._list(by_name=False)

    async def _list_names(self, request: Request, data: FieldData) -> Response:
        return await self._list(by_name=True)

    async def _list(self, *, by_name: bool) -> Response:
        state = await self._scope.store.state()
        found = sorted(state.groups.values(), key=lambda g: g.name if by_name else g.id)
        if not found:
            raise UnsupportedPathError()
        info = {g.id: await views.group_info(self._scope, state, g) for g in found}
        return Response(
            data={"keys": [g.name if by_name else g.id for g in found], "key_info": info}
        )

    # -- group aliases ---------------------------------------------------------

    async def _write_alias(self, request: Request, data: FieldData) -> Response | None:
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

    async def _read_alias(self, request: Request, data: FieldData) -> Response:
        alias = (await self._scope.store.state()).group_alias(data.get("id"))
        if alias is None:
            raise UnsupportedPathError()
        return Response(data=views.group_alias_view(alias, self._scope.mounts))

    async def _delete_alias(self, request: Request, data: FieldData) -> None:
        alias = (await self._scope.store.state()).group_alias(data.get("id"))
        if alias is not None:
            await groups.delete_group_alias(self._scope, alias)

    async def _list_aliases(self, request: Request, data: FieldData) -> Response:
        state = await self._scope.store.state()
        found = sorted(state.group_aliases.values(), key=lambda a: a.id)
        if not found:
            raise UnsupportedPathError()
        return Response(
            data={
                "keys": [a.id for a in found],
                "key_info": {
                    a.id: {
                        "name": a.name,
                        "canonical_id": a.canonical_id,
                        "mount_accessor": a.mount_accessor,
                        **self._scope.mounts.describe(a.mount_accessor),
                    }
                    for a in found
                },
            }
        )
