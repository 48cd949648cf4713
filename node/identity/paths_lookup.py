"""``lookup/entity`` and ``lookup/group``: find one record by any of its keys.

Exactly one criterion is allowed (``alias_name`` with ``alias_mount_accessor``
counting as one); nothing found is a 204, as in the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from node.framework import Field, FieldData, FieldType, Path
from node.identity import views
from node.identity.records import Entity, EntityAlias, Group, GroupAlias
from node.identity.scope import Scope
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk.errors import InvalidRequestError

__all__ = ["LookupPaths"]

R = TypeVar("R", Entity, Group)
A = TypeVar("A", EntityAlias, GroupAlias)

_FIELDS = {
    "id": Field(FieldType.STRING, "ID of the record."),
    "name": Field(FieldType.STRING, "Name of the record."),
    "alias_id": Field(FieldType.STRING, "ID of the record's alias."),
    "alias_name": Field(FieldType.STRING, "Name of the alias (with alias_mount_accessor)."),
    "alias_mount_accessor": Field(
        FieldType.STRING, "Mount accessor of the alias (with alias_name)."
    ),
}


def _criterion(data: FieldData) -> str:
    given = [name for name in _FIELDS if data.given(name)]
    if not given:
        raise InvalidRequestError("query parameter not supplied")
    if set(given) == {"alias_name", "alias_mount_accessor"}:
        return "alias"
    if len(given) > 1:
        raise InvalidRequestError(
            "query parameter conflict; please supply distinct set of query parameters"
        )
    if given[0] in ("alias_name", "alias_mount_accessor"):
        raise InvalidRequestError("both 'alias_name' and 'alias_mount_accessor' needs to be set")
    return given[0]


class LookupPaths:
    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def paths(self) -> list[Path]:
        return [
            Path(
                r"lookup/entity",
                {Operation.UPDATE: self._entity},
                _FIELDS,
                summary="Find an entity by id, name, alias id, or alias name and mount accessor.",
            ),
            Path(
                r"lookup/group",
                {Operation.UPDATE: self._group},
                _FIELDS,
                summary="Find a group by id, name, alias id, or alias name and mount accessor.",
            ),
        ]

    async def _entity(self, request: Request, data: FieldData) -> Response | None:
        state = await self._scope.store.state()
        entity = _lookup(
            data, state.entity, state.entity_by_name, state.alias, state.alias_by_factors
        )
        if entity is None:
            return None
        return Response(data=await views.entity_view(self._scope, state, entity))

    async def _group(self, request: Request, data: FieldData) -> Response | None:
        state = await self._scope.store.state()
        group = _lookup(
            data,
            state.group,
            state.group_by_name,
            state.group_alias,
            state.group_alias_by_factors,
        )
        if group is None:
            return None
        return Response(data=await views.group_view(self._scope, state, group))


def _lookup(
    data: FieldData,
    by_id: Callable[[str], R | None],
    by_name: Callable[[str], R | None],
    alias_by_id: Callable[[str], A | None],
    alias_by_factors: Callable[[str, str], A | None],
) -> R | None:
    """The record the one criterion in ``data`` names, if any."""
    how = _criterion(data)
    if how == "id":
        return by_id(data.get("id"))
    if how == "name":
        return by_name(data.get("name"))
    alias = (
        alias_by_id(data.get("alias_id"))
        if how == "alias_id"
        else alias_by_factors(data.get("alias_mount_accessor"), data.get("alias_name"))
    )
    return by_id(alias.canonical_id) if alias is not None else None
