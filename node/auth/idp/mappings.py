"""Locally defined users and groups, which map provider identities to policies.

Users are case-sensitive. Groups are stored lower-case and looked up
case-insensitively, because the provider preserves case but compares
without it (as the reference does). Names may contain ``/``, so they are
percent-encoded into one storage segment and decoded on listing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from node.barrier.view import BarrierView
from sdk.errors import InvalidRequestError, RevisionMismatchError
from sdk.physical import Put

__all__ = [
    "GroupEntry",
    "Mappings",
    "UserEntry",
    "clean_groups",
    "clean_policies",
    "shown_policies",
    "update_json",
]

_MAX_RETRIES = 5


def _key(name: str) -> str:
    # "." stays unescaped by quote(); escape it so "." and ".." are ordinary keys.
    return quote(name, safe="").replace(".", "%2E")


async def update_json(view: BarrierView, key: str, change: Callable[[Any], Any]) -> Any:
    """Store ``change(current)`` (``current`` is ``None`` when absent) if nobody
    wrote ``key`` in between; ``change`` is re-run on fresh data otherwise, so
    concurrent partial updates never lose each other's fields."""
    for _ in range(_MAX_RETRIES):
        found = await view.get(key)
        value = change(json.loads(found.value) if found else None)
        record = json.dumps(value, separators=(",", ":")).encode()
        try:
            await view.commit([Put(key, record, expect=found.revision if found else 0)])
        except RevisionMismatchError:
            continue
        return value
    raise InvalidRequestError("too much contention on this entry; retry the request")


def clean_policies(values: Iterable[str]) -> list[str]:
    """Policy names as stored: trimmed, lower-case, unique, sorted."""
    return sorted({v.strip().lower() for v in values if v.strip()})


def clean_groups(values: Iterable[str]) -> list[str]:
    return sorted({v.strip() for v in values if v.strip()})


def shown_policies(policies: list[str]) -> list[str]:
    """A read's policy list, which includes ``default`` (SPEC.md)."""
    return sorted({*policies, "default"})


@dataclass(frozen=True, slots=True)
class UserEntry:
    groups: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"groups": self.groups, "policies": self.policies}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> UserEntry:
        return cls(list(raw.get("groups") or []), list(raw.get("policies") or []))


@dataclass(frozen=True, slots=True)
class GroupEntry:
    policies: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"policies": self.policies}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> GroupEntry:
        return cls(list(raw.get("policies") or []))


class Mappings:
    def __init__(self, view: BarrierView) -> None:
        self._users = view.sub_view("user/")
        self._groups = view.sub_view("group/")

    async def user(self, name: str) -> UserEntry | None:
        raw = await self._users.get_json(_key(name))
        return UserEntry.from_json(raw) if raw is not None else None

    async def update_user(self, name: str, change: Callable[[UserEntry], UserEntry]) -> None:
        """Apply ``change`` to the stored user (an empty one when new)."""
        await update_json(
            self._users,
            _key(name),
            lambda raw: change(UserEntry.from_json(raw) if raw else UserEntry()).to_json(),
        )

    async def delete_user(self, name: str) -> None:
        await self._users.delete(_key(name))

    async def users(self) -> list[str]:
        return sorted(unquote(k) for k in await self._users.list())

    async def group(self, name: str) -> GroupEntry | None:
        raw = await self._groups.get_json(_key(name.lower()))
        return GroupEntry.from_json(raw) if raw is not None else None

    async def update_group(self, name: str, change: Callable[[GroupEntry], GroupEntry]) -> None:
        await update_json(
            self._groups,
            _key(name.lower()),
            lambda raw: change(GroupEntry.from_json(raw) if raw else GroupEntry()).to_json(),
        )

    async def delete_group(self, name: str) -> None:
        await self._groups.delete(_key(name.lower()))

    async def groups(self) -> list[str]:
        return sorted(unquote(k) for k in await self._groups.list())
