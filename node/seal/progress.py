"""Collects key shares towards a threshold (unseal, generate-root, DR tokens)."""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass, field

from sdk.errors import InvalidRequestError

__all__ = ["ShareCollector"]


@dataclass(slots=True)
class ShareCollector:
    """Shares entered so far in one attempt, identified by ``nonce``."""

    required: int
    nonce: str = field(default_factory=lambda: str(uuid.uuid4()))
    shares: list[bytes] = field(default_factory=list)

    @property
    def progress(self) -> int:
        return len(self.shares)

    @property
    def complete(self) -> bool:
        return len(self.shares) >= self.required

    def add(self, share: bytes) -> None:
        if any(hmac.compare_digest(share, seen) for seen in self.shares):
            raise InvalidRequestError(
                "given key has already been provided during this generation operation"
            )
        if self.shares and len(share) != len(self.shares[0]):
            raise InvalidRequestError("invalid key: length differs from the keys already given")
        self.shares.append(share)

    def __repr__(self) -> str:
        return f"ShareCollector(progress={self.progress}, required={self.required})"
