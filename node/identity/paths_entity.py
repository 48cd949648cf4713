"""``entity``, ``entity/id/*``, ``entity/name/*``, ``entity-alias`` and ``entity-alias/id/*``."""

from __future__ import annotations

from node.errors import UnsupportedPathError
from node.framework import Field, FieldData, FieldType, Path
from node.identity import entities, views
from node.identity.entities import AliasChange, EntityChange
from node.identity.inputs import metadata, policy_list
from node.identity.records import Entity
from node.identity.scope import Scope
from node.logical.request import Operation, Request
from node.logical.response import Response

__all__ = ["EntityPaths"]

_ENTITY_FIELDS = {
    "id": Field(FieldType.STRING, "ID of the entity. If set, updates the corresponding entity."),
    "name": Field(FieldType.STRING, "Name of the entity."),
    "metadata": Field(FieldType.ANY, "Key/value pairs (an object, or a list of 'key=value')."),
    "policies": Field(FieldType.COMMA_STRING_LIST, "Policies tied to the entity."),
    "disabled": Field(FieldType.BOOL, "Tokens of a disabled entity cannot be used."),
}
_ALIAS_FIELDS = {
    "id": Field(FieldType.STRING, "ID of the alias. If set, updates that alias."),
    "canonical_id": Field(FieldType.STRING, "ID of the entity the alias belongs to."),
    "entity_id": Field(FieldType.STRING, "Deprecated name of canonical_id."),
    "mount_accessor": Field(FieldType.STRING, "Accessor of the auth mount the alias belongs to."),
    "name": Field(FieldType.STRING, "Name of the alias (the login name on that mount)."),
    "custom_metadata": Field(FieldType.ANY, "Operator-set key/value pairs."),
}


def _missing() -> UnsupportedPathError:
    return UnsupportedPathError()


class EntityPaths:
    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def paths(self) -> list[Path]:
        lists = {Operation.LIST: self._list_ids}
        return [
            Path(
                r"entity",
                {Operation.UPDATE: self._write},
                _ENTITY_FIELDS,
                summary="Create an entity, or update the one with the given id or name.",
            ),
            Path(r"entity/id/?", lists, summary="List entities by id."),
            Path(
                r"entity/name/?", {Operation.LIST: self._list_names}, summary="List entity names."
            ),
            Path(
                r"entity/id/(?P<id>[^/]+)",
                {
                    Operation.READ: self._read,
                    Operation.UPDATE: self._write,
                    Operation.DELETE: self._delete,
                },
                _ENTITY_FIELDS,
                summary="Read, update or delete an entity by id.",
            ),
            Path(
                r"entity/name/(?P<name>.+)",
                {
                    Operation.READ: self._read,
                    Operation.UPDATE: self._write,
                    Operation.DELETE: self._delete,
                },
                _ENTITY_FIELDS,
                summary="Read, create or update, or delete an entity by name.",
            ),
            Path(
                r"entity-alias",
                {Operation.UPDATE: self._write_alias},
                _ALIAS_FIELDS,
                summary="Create an entity alias, or update the one with the given id or factors.",
            ),
            Path(
                r"entity-alias/id/?",
                {Operation.LIST: self._list_aliases},
                summary="List entity aliases.",
            ),
            Path(
                r"entity-alias/id/(?P<id>[^/]+)",
                {
                    Operation.READ: self._read_alias,
                    Operation.UPDATE: self._write_alias,
                    Operation.DELETE: self._delete_alias,
                },
                _ALIAS_FIELDS,
                summary="Read, update or delete an entity alias by id.",
            ),
        ]

    # -- entities --------------------------------------------------------------

    async def _find(self, data: FieldData) -> Entity | None:
        state = await self._scope.store.state()
        if data.given("id"):
            return state.entity(data.get("id"))
        return state.entity_by_name(data.get("name") or "")

    async def _write(self, request: Request, data: FieldData) -> Response | None:
        change = EntityChange(
            entity_id=data.get("id") or "",
            name=data.get("name") or "",
            policies=policy_list(data.get("policies")) if data.given("policies") else None,
            metadata=metadata(data.get("metadata")) if data.given("metadata") else None,
            disabled=data.get("disabled") if data.given("disabled") else None,
        )
        entity, created = await entities.save_entity(self._scope, change)
        if not created:
            return None
        return Response(data={"id": entity.id, "name": entity.name, "aliases": None})

    async def _read(self, request: Request, data: FieldData) -> Response:
        entity = await self._find(data)
        if entity is None:
            raise _missing()
        state = await self._scope.store.state()
        return Response(data=await views.entity_view(self._scope, state, entity))

    async def _delete(self, request: Request, data: FieldData) -> None:
        entity = await self._find(data)
        if entity is not None:
            await entities.delete_entity(self._scope, entity)

    async def _list_ids(self, request: Request, data: FieldData) -> Response:
        return await self._list(by_name=False)

    async def _list_names(self, request: Request, data: FieldData) -> Response:
        return await self._list(by_name=True)

    async def _list(self, *, by_name: bool) -> Response:
        state = await self._scope.store.state()
        found = sorted(state.entities.values(), key=lambda e: e.name if by_name else e.id)
        if not found:
            raise _missing()
        return Response(
            data={
                "keys": [e.name if by_name else e.id for e in found],
                # Keyed by id for both listings, as the reference does.
                "key_info": {e.id: views.entity_info(state, e, self._scope.mounts) for e in found},
            }
        )

    # -- aliases ---------------------------------------------------------------

    async def _write_alias(self, request: Request, data: FieldData) -> Response | None:
        custom = data.get("custom_metadata")
        change = AliasChange(
            alias_id=data.get("id") or "",
            name=data.get("name") or "",
            mount_accessor=data.get("mount_accessor") or "",
            canonical_id=data.get("canonical_id") or data.get("entity_id") or "",
            custom_metadata=(
                metadata(custom, "custom_metadata", custom=True)
                if data.given("custom_metadata")
                else None
            ),
        )
        alias = await entities.save_alias(self._scope, change)
        if alias is None:
            return None
        return Response(data={"id": alias.id, "canonical_id": alias.canonical_id})

    async def _read_alias(self, request: Request, data: FieldData) -> Response:
        alias = (await self._scope.store.state()).alias(data.get("id"))
        if alias is None:
            raise _missing()
        return Response(data=views.alias_view(alias, self._scope.mounts))

    async def _delete_alias(self, request: Request, data: FieldData) -> None:
        alias = (await self._scope.store.state()).alias(data.get("id"))
        if alias is not None:
            await entities.delete_alias(self._scope, alias)

    async def _list_aliases(self, request: Request, data: FieldData) -> Response:
        state = await self._scope.store.state()
        found = sorted(state.aliases.values(), key=lambda a: a.id)
        if not found:
            raise _missing()
        return Response(
            data={
                "keys": [a.id for a in found],
                "key_info": {a.id: views.alias_info(a, self._scope.mounts) for a in found},
            }
        )
