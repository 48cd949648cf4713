"""The four identity records as stored: entities, their aliases, groups and group aliases.

Records are immutable values; a change is a new record written with a
revision check, so the in-memory cache is never edited behind storage's back.
Lists are tuples and JSON uses the reference's field names.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

__all__ = [
    "EXTERNAL",
    "INTERNAL",
    "Entity",
    "EntityAlias",
    "Group",
    "GroupAlias",
    "Record",
    "new_id",
    "now",
]

INTERNAL: Final = "internal"
EXTERNAL: Final = "external"


def new_id() -> str:
    return str(uuid.uuid4())


def now() -> str:
    """RFC 3339 with microseconds, UTC (the reference prints protobuf timestamps so)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _strings(raw: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in raw or ())


def _mapping(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in (raw or {}).items()}


@dataclass(frozen=True, slots=True)
class Entity:
    id: str
    name: str
    namespace_id: str
    policies: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    disabled: bool = False
    alias_ids: tuple[str, ...] = ()
    creation_time: str = ""
    last_update_time: str = ""

    kind = "entity"

    def touched(self, **changes: Any) -> Entity:
        return replace(self, last_update_time=now(), **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "namespace_id": self.namespace_id,
            "policies": list(self.policies),
            "metadata": dict(self.metadata),
            "disabled": self.disabled,
            "alias_ids": list(self.alias_ids),
            "creation_time": self.creation_time,
            "last_update_time": self.last_update_time,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Entity:
        return cls(
            id=raw["id"],
            name=raw["name"],
            namespace_id=raw["namespace_id"],
            policies=_strings(raw.get("policies")),
            metadata=_mapping(raw.get("metadata")),
            disabled=bool(raw.get("disabled", False)),
            alias_ids=_strings(raw.get("alias_ids")),
            creation_time=raw.get("creation_time", ""),
            last_update_time=raw.get("last_update_time", ""),
        )


@dataclass(frozen=True, slots=True)
class EntityAlias:
    id: str
    name: str
    canonical_id: str
    mount_accessor: str
    namespace_id: str
    mount_type: str = ""
    #: Set by the auth method at login (e.g. the user's attributes).
    metadata: dict[str, str] = field(default_factory=dict)
    #: Set by operators through the API; logins never change it.
    custom_metadata: dict[str, str] = field(default_factory=dict)
    creation_time: str = ""
    last_update_time: str = ""

    kind = "alias"

    def touched(self, **changes: Any) -> EntityAlias:
        return replace(self, last_update_time=now(), **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "canonical_id": self.canonical_id,
            "mount_accessor": self.mount_accessor,
            "namespace_id": self.namespace_id,
            "mount_type": self.mount_type,
            "metadata": dict(self.metadata),
            "custom_metadata": dict(self.custom_metadata),
            "creation_time": self.creation_time,
            "last_update_time": self.last_update_time,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> EntityAlias:
        return cls(
            id=raw["id"],
            name=raw["name"],
            canonical_id=raw["canonical_id"],
            mount_accessor=raw["mount_accessor"],
            namespace_id=raw["namespace_id"],
            mount_type=raw.get("mount_type", ""),
            metadata=_mapping(raw.get("metadata")),
            custom_metadata=_mapping(raw.get("custom_metadata")),
            creation_time=raw.get("creation_time", ""),
            last_update_time=raw.get("last_update_time", ""),
        )


@dataclass(frozen=True, slots=True)
class Group:
    id: str
    name: str
    namespace_id: str
    type: Literal["internal", "external"] = "internal"
    policies: tuple[str, ...] = ()
    member_entity_ids: tuple[str, ...] = ()
    #: Child groups: their members inherit this group's policies.
    member_group_ids: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    #: The group alias (external groups only), "" when none.
    alias_id: str = ""
    creation_time: str = ""
    last_update_time: str = ""
    modify_index: int = 0

    kind = "group"

    def touched(self, **changes: Any) -> Group:
        return replace(self, last_update_time=now(), modify_index=self.modify_index + 1, **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "namespace_id": self.namespace_id,
            "type": self.type,
            "policies": list(self.policies),
            "member_entity_ids": list(self.member_entity_ids),
            "member_group_ids": list(self.member_group_ids),
            "metadata": dict(self.metadata),
            "alias_id": self.alias_id,
            "creation_time": self.creation_time,
            "last_update_time": self.last_update_time,
            "modify_index": self.modify_index,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Group:
        return cls(
            id=raw["id"],
            name=raw["name"],
            namespace_id=raw["namespace_id"],
            type=EXTERNAL if raw.get("type") == EXTERNAL else INTERNAL,
            policies=_strings(raw.get("policies")),
            member_entity_ids=_strings(raw.get("member_entity_ids")),
            member_group_ids=_strings(raw.get("member_group_ids")),
            metadata=_mapping(raw.get("metadata")),
            alias_id=raw.get("alias_id", ""),
            creation_time=raw.get("creation_time", ""),
            last_update_time=raw.get("last_update_time", ""),
            modify_index=int(raw.get("modify_index", 0)),
        )


@dataclass(frozen=True, slots=True)
class GroupAlias:
    id: str
    name: str
    mount_accessor: str
    canonical_id: str
    namespace_id: str
    creation_time: str = ""
    last_update_time: str = ""

    kind = "group-alias"

    def touched(self, **changes: Any) -> GroupAlias:
        return replace(self, last_update_time=now(), **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "mount_accessor": self.mount_accessor,
            "canonical_id": self.canonical_id,
            "namespace_id": self.namespace_id,
            "creation_time": self.creation_time,
            "last_update_time": self.last_update_time,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> GroupAlias:
        return cls(
            id=raw["id"],
            name=raw["name"],
            mount_accessor=raw["mount_accessor"],
            canonical_id=raw["canonical_id"],
            namespace_id=raw["namespace_id"],
            creation_time=raw.get("creation_time", ""),
            last_update_time=raw.get("last_update_time", ""),
        )


Record = Entity | EntityAlias | Group | GroupAlias
