"""Users of one userpass mount, stored as ``user/<name>`` in the mount's view.

A record holds only the password's Argon2 hash and the token settings, never
the password. Updates are read-modify-write conditioned on the record's
revision, so two writers changing different fields do not undo each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from node.auth.common.token_settings import TokenSettings
from node.barrier.view import BarrierView
from sdk.errors import InvalidRequestError, RevisionMismatchError
from sdk.physical import Put

__all__ = ["UserEntry", "UserStore"]

_PREFIX = "user/"
_MAX_RETRIES = 5


@dataclass(frozen=True, slots=True)
class UserEntry:
    password_hash: str
    token: TokenSettings = field(default_factory=TokenSettings)

    def to_json(self) -> dict[str, Any]:
        return {"password_hash": self.password_hash, "token": self.token.to_json()}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> UserEntry:
        return cls(str(raw["password_hash"]), TokenSettings.from_json(raw.get("token")))


class UserStore:
    def __init__(self, view: BarrierView) -> None:
        self._view = view

    async def get(self, name: str) -> UserEntry | None:
        found = await self._view.get_json(_PREFIX + name)
        return UserEntry.from_json(found) if isinstance(found, dict) else None

    async def update(self, name: str, change: Callable[[UserEntry | None], UserEntry]) -> None:
        """Store ``change(current)``; ``current`` is ``None`` for a new user.

        ``change`` may raise to refuse; it is re-run on fresh data after a
        concurrent write.
        """
        key = _PREFIX + name
        for _ in range(_MAX_RETRIES):
            found = await self._view.get(key)
            current = UserEntry.from_json(json.loads(found.value)) if found else None
            record = json.dumps(change(current).to_json(), separators=(",", ":")).encode()
            try:
                await self._view.commit([Put(key, record, expect=found.revision if found else 0)])
            except RevisionMismatchError:
                continue
            return
        raise InvalidRequestError("too much contention on this user; retry the request")

    async def delete(self, name: str) -> None:
        await self._view.delete(_PREFIX + name)

    async def names(self) -> list[str]:
        return sorted(key for key in await self._view.list(_PREFIX) if not key.endswith("/"))
