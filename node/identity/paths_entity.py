"""``entity``, ``entity/id/*``, ``entity/name/*``, ``entity-alias`` and ``entity-alias/id/*``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from node.framework import Field, FieldData, FieldType, Path
from node.identity import entities, views
from node.identity.entities import AliasChange, EntityChange
from node.identity.inputs import metadata, policy_list
from node.identity.paths_records import RecordPaths
from node.identity.records import Entity, EntityAlias
from node.identity.scope import Scope
from node.identity.state import IdentityState
from node.logical.request import Request
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


class EntityPaths:
    """The entity paths, then the entity-alias paths."""

    def __init__(self, scope: Scope) -> None:
        self._kinds = (_Entities(scope), _Aliases(scope))

    def paths(self) -> list[Path]:
        return [path for kind in self._kinds for path in kind.paths()]


class _Entities(RecordPaths[Entity]):
    kind = "entity"
    noun = "an entity"
    fields = _ENTITY_FIELDS
    write_summary = "Create an entity, or update the one with the given id or name."
    list_summary = "List entities by id."
    named = True

    def _get(self, state: IdentityState, record_id: str) -> Entity | None:
        return state.entity(record_id)

    def _get_by_name(self, state: IdentityState, name: str) -> Entity | None:
        return state.entity_by_name(name)

    def _records(self, state: IdentityState) -> Iterable[Entity]:
        return state.entities.values()

    async def _view(self, state: IdentityState, record: Entity) -> dict[str, Any]:
        return await views.entity_view(self._scope, state, record)

    async def _info(self, state: IdentityState, record: Entity) -> dict[str, Any]:
        return views.entity_info(state, record, self._scope.mounts)

    async def _remove(self, record: Entity) -> None:
        await entities.delete_entity(self._scope, record)

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


class _Aliases(RecordPaths[EntityAlias]):
    kind = "entity-alias"
    noun = "an entity alias"
    fields = _ALIAS_FIELDS
    write_summary = "Create an entity alias, or update the one with the given id or factors."
    list_summary = "List entity aliases."

    def _get(self, state: IdentityState, record_id: str) -> EntityAlias | None:
        return state.alias(record_id)

    def _records(self, state: IdentityState) -> Iterable[EntityAlias]:
        return state.aliases.values()

    async def _view(self, state: IdentityState, record: EntityAlias) -> dict[str, Any]:
        return views.alias_view(record, self._scope.mounts)

    async def _info(self, state: IdentityState, record: EntityAlias) -> dict[str, Any]:
        return views.alias_info(record, self._scope.mounts)

    async def _remove(self, record: EntityAlias) -> None:
        await entities.delete_alias(self._scope, record)

    async def _write(self, request: Request, data: FieldData) -> Response | None:
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
