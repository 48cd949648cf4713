"""The stored record of one token (never the token ID itself)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

__all__ = ["TokenEntry", "rfc3339"]


def rfc3339(epoch: float) -> str:
    return (
        datetime.fromtimestamp(epoch, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    )


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """A token's properties.

    ``key`` is the salted hash under which the entry is stored; ``parent`` is
    the parent's key ("" for orphans). ``expire_time`` 0 means no expiry.
    ``cubbyhole_id`` names the token's private cubbyhole storage.
    """

    key: str
    accessor: str
    policies: list[str]
    display_name: str
    creation_time: float
    path: str = "auth/token/create"
    parent: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    num_uses: int = 0
    creation_ttl: int = 0
    expire_time: float = 0.0
    explicit_max_ttl: int = 0
    period: int = 0
    renewable: bool = True
    type: str = "service"
    role: str = ""
    entity_id: str = ""
    cubbyhole_id: str = ""
    last_renewal_time: float = 0.0
    bound_cidrs: list[str] = field(default_factory=list)
    namespace_id: str = "root"
    #: The issuing method's max TTL at creation (0: the server's); renewals never pass it.
    max_ttl: int = 0
    #: The auth method's data for renewing its login (never shown in lookups).
    internal: dict[str, str] = field(default_factory=dict)

    @property
    def is_root(self) -> bool:
        return "root" in self.policies

    @property
    def orphan(self) -> bool:
        return not self.parent

    def expired(self, now: float | None = None) -> bool:
        return bool(self.expire_time) and self.expire_time <= (now or time.time())

    def remaining_ttl(self, now: float | None = None) -> int:
        if not self.expire_time:
            return 0
        return max(0, int(self.expire_time - (now or time.time())))

    def to_json(self) -> dict[str, Any]:
        """The stored record: the fields in declaration order (as ``asdict`` gave
        them, so the bytes are unchanged), containers copied, without the
        recursive deep copy ``asdict`` pays for."""
        record: dict[str, Any] = {
            "key": self.key,
            "accessor": self.accessor,
            "policies": list(self.policies),
            "display_name": self.display_name,
            "creation_time": self.creation_time,
            "path": self.path,
            "parent": self.parent,
            "meta": dict(self.meta),
            "num_uses": self.num_uses,
            "creation_ttl": self.creation_ttl,
            "expire_time": self.expire_time,
            "explicit_max_ttl": self.explicit_max_ttl,
            "period": self.period,
            "renewable": self.renewable,
            "type": self.type,
            "role": self.role,
            "entity_id": self.entity_id,
            "cubbyhole_id": self.cubbyhole_id,
            "last_renewal_time": self.last_renewal_time,
            "bound_cidrs": list(self.bound_cidrs),
            "namespace_id": self.namespace_id,
            "max_ttl": self.max_ttl,
            "internal": dict(self.internal),
        }
        return record

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TokenEntry:
        return cls(**raw)

    def with_changes(self, **changes: Any) -> TokenEntry:
        return replace(self, **changes)

    def lookup_data(self, token_id: str = "") -> dict[str, Any]:
        """The ``data`` of a token lookup, as the reference shapes it."""
        now = time.time()
        data: dict[str, Any] = {
            "id": token_id,
            "accessor": self.accessor,
            "policies": self.policies,
            "path": self.path,
            "meta": self.meta or None,
            "display_name": self.display_name,
            "num_uses": self.num_uses,
            "orphan": self.orphan,
            "creation_time": int(self.creation_time),
            "creation_ttl": self.creation_ttl,
            "expire_time": rfc3339(self.expire_time) if self.expire_time else None,
            "ttl": self.remaining_ttl(now),
            "explicit_max_ttl": self.explicit_max_ttl,
            "entity_id": self.entity_id,
            "type": self.type,
            "issue_time": rfc3339(self.creation_time),
            "renewable": self.renewable,
            "namespace_path": "",
            "identity_policies": [],
            "external_namespace_policies": {},
        }
        if self.last_renewal_time:
            data["last_renewal_time"] = int(self.last_renewal_time)
            data["last_renewal"] = rfc3339(self.last_renewal_time)
        if self.period:
            data["period"] = self.period
        if self.role:
            data["role"] = self.role
        if self.bound_cidrs:
            data["bound_cidrs"] = self.bound_cidrs
        return data
