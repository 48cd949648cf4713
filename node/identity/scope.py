"""What an identity operation works on: its namespace's store, the service, the mounts."""

from __future__ import annotations

from dataclasses import dataclass

from node.identity.inputs import MountDirectory
from node.identity.records import Group
from node.identity.service import IdentityService
from node.identity.state import IdentityState
from node.identity.store import IdentityStore

__all__ = ["Scope", "without_member"]


def without_member(state: IdentityState, *, entity_id: str = "", group_id: str = "") -> list[Group]:
    """Groups of ``state`` that list the entity or group, with it removed."""
    changed = []
    for group in state.groups.values():
        if entity_id in group.member_entity_ids or group_id in group.member_group_ids:
            changed.append(
                group.touched(
                    member_entity_ids=tuple(m for m in group.member_entity_ids if m != entity_id),
                    member_group_ids=tuple(m for m in group.member_group_ids if m != group_id),
                )
            )
    return changed


@dataclass(frozen=True, slots=True)
class Scope:
    service: IdentityService
    store: IdentityStore
    mounts: MountDirectory

    @property
    def namespace_id(self) -> str:
        return self.store.namespace_id

    async def forget_in_ancestors(self, *, entity_id: str = "", group_id: str = "") -> None:
        """Drop a deleted entity or group from the groups of parent namespaces.

        Groups may list members from namespaces below them; each parent
        namespace is its own transaction (its store has its own view), made
        after the deletion itself committed. A reference left by a failure
        here is harmless: lookups skip ids that no longer exist.
        """
        for namespace_id in self.service.chain(self.namespace_id)[:-1]:
            store = self.service.store(namespace_id)
            if store is None:
                continue

            async def strip(state: IdentityState, store: IdentityStore = store) -> None:
                changed = without_member(state, entity_id=entity_id, group_id=group_id)
                if changed:
                    await store.commit(changed)

            await store.run(strip)
