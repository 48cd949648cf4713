"""The token store: salted-hash persistence of token entries."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from node.barrier.view import BarrierView
from node.tokens.ids import new_accessor, new_token_id

__all__ = ["TokenEntry", "TokenStore"]


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """What is stored for one token (never the token ID itself)."""

    accessor: str
    policies: list[str]
    display_name: str
    creation_time: int
    path: str = "auth/token/root"
    ttl: int = 0
    meta: dict[str, str] = field(default_factory=dict)
    type: str = "service"

    @property
    def is_root(self) -> bool:
        return "root" in self.policies


class TokenStore:
    """Creates, looks up and revokes tokens under ``sys/token/``."""

    def __init__(self, view: BarrierView) -> None:
        self._view = view
        self._salt: bytes | None = None

    async def _salt_bytes(self) -> bytes:
        if self._salt is None:
            found = await self._view.get("salt")
            if found is None:
                salt = os.urandom(32)
                await self._view.put("salt", salt)
                self._salt = salt
            else:
                self._salt = found.value
        return self._salt

    async def hash_id(self, token_id: str) -> str:
        return hmac.new(await self._salt_bytes(), token_id.encode(), hashlib.sha256).hexdigest()

    def forget_cached_salt(self) -> None:
        """Drop in-memory key material when the barrier seals."""
        self._salt = None

    async def create_root(self, display_name: str = "root") -> tuple[str, TokenEntry]:
        return await self.create_root_with_id(new_token_id(), display_name)

    async def create_root_with_id(
        self, token_id: str, display_name: str = "root"
    ) -> tuple[str, TokenEntry]:
        """Store a root token with a chosen ID (dev mode's ``-dev-root-token-id``)."""
        entry = TokenEntry(
            accessor=new_accessor(),
            policies=["root"],
            display_name=display_name,
            creation_time=int(time.time()),
        )
        hashed = await self.hash_id(token_id)
        await self._view.put_json(f"id/{hashed}", asdict(entry))
        await self._view.put_json(f"accessor/{entry.accessor}", {"hashed_id": hashed})
        return token_id, entry

    async def lookup(self, token_id: str) -> TokenEntry | None:
        if not token_id:
            return None
        raw: dict[str, Any] | None = await self._view.get_json(f"id/{await self.hash_id(token_id)}")
        return TokenEntry(**raw) if raw else None

    async def revoke(self, token_id: str) -> None:
        hashed = await self.hash_id(token_id)
        raw = await self._view.get_json(f"id/{hashed}")
        if raw:
            await self._view.delete(f"accessor/{raw['accessor']}")
        await self._view.delete(f"id/{hashed}")
