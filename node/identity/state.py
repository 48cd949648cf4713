"""One namespace's identity records held in memory, with the indexes lookups need.

The store loads this once and updates it after each successful commit, so
reads (every login and every request of a token with an entity) never touch
storage. Names and alias names compare case-insensitively, as the reference
does by default; records keep the case they were given.
"""

from __future__ import annotations

from urllib.parse import quote

from node.identity.records import Entity, EntityAlias, Group, GroupAlias, Record

__all__ = ["IdentityState", "fold", "index_keys", "record_key"]

_PREFIXES = {
    "entity": "entity/",
    "alias": "alias/",
    "group": "group/",
    "group-alias": "group-alias/",
}


def fold(name: str) -> str:
    """The form names are compared in."""
    return name.lower()


def _segment(text: str) -> str:
    # One storage key segment whatever the text: no "/", and never "." or "..".
    return quote(text, safe="").replace(".", "%2E")


def record_key(record: Record) -> str:
    return _PREFIXES[record.kind] + record.id


def index_keys(record: Record) -> dict[str, str]:
    """The uniqueness keys ``record`` owns (key -> the record's id)."""
    name = _segment(fold(record.name))
    if isinstance(record, Entity):
        return {f"entity-name/{name}": record.id}
    if isinstance(record, Group):
        return {f"group-name/{name}": record.id}
    accessor = _segment(record.mount_accessor)
    if isinstance(record, EntityAlias):
        return {f"alias-by-factors/{accessor}/{name}": record.id}
    return {f"group-alias-by-factors/{accessor}/{name}": record.id}


class IdentityState:
    """Records by id, name indexes, and the reverse membership indexes."""

    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self.aliases: dict[str, EntityAlias] = {}
        self.groups: dict[str, Group] = {}
        self.group_aliases: dict[str, GroupAlias] = {}
        #: Storage key of each record -> the revision it was read or written at.
        self.revisions: dict[str, int] = {}
        self._entity_names: dict[str, str] = {}
        self._group_names: dict[str, str] = {}
        self._alias_factors: dict[tuple[str, str], str] = {}
        self._group_alias_factors: dict[tuple[str, str], str] = {}
        self._reverse: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None

    # -- maintenance (by the store only) ---------------------------------------

    def put(self, record: Record, revision: int) -> None:
        self.remove(record.id, record.kind)
        self.revisions[record_key(record)] = revision
        if isinstance(record, Entity):
            self.entities[record.id] = record
            self._entity_names[fold(record.name)] = record.id
        elif isinstance(record, EntityAlias):
            self.aliases[record.id] = record
            self._alias_factors[(record.mount_accessor, fold(record.name))] = record.id
        elif isinstance(record, Group):
            self.groups[record.id] = record
            self._group_names[fold(record.name)] = record.id
            self._reverse = None
        else:
            self.group_aliases[record.id] = record
            self._group_alias_factors[(record.mount_accessor, fold(record.name))] = record.id

    def remove(self, record_id: str, kind: str) -> None:
        old = self.get(kind, record_id)
        if old is None:
            return
        self.revisions.pop(record_key(old), None)
        if isinstance(old, Entity):
            del self.entities[old.id]
            self._entity_names.pop(fold(old.name), None)
        elif isinstance(old, EntityAlias):
            del self.aliases[old.id]
            self._alias_factors.pop((old.mount_accessor, fold(old.name)), None)
        elif isinstance(old, Group):
            del self.groups[old.id]
            self._group_names.pop(fold(old.name), None)
            self._reverse = None
        else:
            del self.group_aliases[old.id]
            self._group_alias_factors.pop((old.mount_accessor, fold(old.name)), None)

    def get(self, kind: str, record_id: str) -> Record | None:
        if kind == "entity":
            return self.entities.get(record_id)
        if kind == "alias":
            return self.aliases.get(record_id)
        if kind == "group":
            return self.groups.get(record_id)
        return self.group_aliases.get(record_id)

    # -- lookups ---------------------------------------------------------------

    def entity(self, entity_id: str) -> Entity | None:
        return self.entities.get(entity_id)

    def entity_by_name(self, name: str) -> Entity | None:
        found = self._entity_names.get(fold(name))
        return self.entities.get(found) if found else None

    def alias(self, alias_id: str) -> EntityAlias | None:
        return self.aliases.get(alias_id)

    def alias_by_factors(self, mount_accessor: str, name: str) -> EntityAlias | None:
        found = self._alias_factors.get((mount_accessor, fold(name)))
        return self.aliases.get(found) if found else None

    def aliases_of(self, entity: Entity) -> list[EntityAlias]:
        return [self.aliases[a] for a in entity.alias_ids if a in self.aliases]

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def group_by_name(self, name: str) -> Group | None:
        found = self._group_names.get(fold(name))
        return self.groups.get(found) if found else None

    def group_alias(self, alias_id: str) -> GroupAlias | None:
        return self.group_aliases.get(alias_id)

    def group_alias_by_factors(self, mount_accessor: str, name: str) -> GroupAlias | None:
        found = self._group_alias_factors.get((mount_accessor, fold(name)))
        return self.group_aliases.get(found) if found else None

    def groups_with_entity(self, entity_id: str) -> list[Group]:
        """Groups of this namespace that list ``entity_id`` as a direct member."""
        by_entity, _ = self._reverse_indexes()
        return [self.groups[g] for g in by_entity.get(entity_id, ())]

    def parents_of(self, group_id: str) -> list[Group]:
        """Groups of this namespace that list ``group_id`` in ``member_group_ids``."""
        _, by_group = self._reverse_indexes()
        return [self.groups[g] for g in by_group.get(group_id, ())]

    def _reverse_indexes(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        if self._reverse is None:
            by_entity: dict[str, list[str]] = {}
            by_group: dict[str, list[str]] = {}
            for group in sorted(self.groups.values(), key=lambda g: g.name):
                for member in group.member_entity_ids:
                    by_entity.setdefault(member, []).append(group.id)
                for member in group.member_group_ids:
                    by_group.setdefault(member, []).append(group.id)
            self._reverse = (by_entity, by_group)
        return self._reverse
