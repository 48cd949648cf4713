"""Seal configuration stored in plaintext beside the encrypted root key.

It holds no secret: only the seal type, share count and threshold, which
unauthenticated ``sys/seal-status`` reports anyway.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sdk.errors import InvalidRequestError

__all__ = ["SEAL_CONFIG_PATH", "SealConfig", "SealTypeMismatchError", "validate_shares"]

SEAL_CONFIG_PATH = "core/seal-config"


class SealTypeMismatchError(InvalidRequestError):
    """Storage was initialised under another seal type than the one configured."""


@dataclass(frozen=True, slots=True)
class SealConfig:
    type: str
    secret_shares: int
    secret_threshold: int

    def serialize(self) -> bytes:
        return json.dumps(
            {
                "type": self.type,
                "secret_shares": self.secret_shares,
                "secret_threshold": self.secret_threshold,
            }
        ).encode()

    @classmethod
    def deserialize(cls, raw: bytes) -> SealConfig:
        doc = json.loads(raw)
        return cls(str(doc["type"]), int(doc["secret_shares"]), int(doc["secret_threshold"]))


def validate_shares(shares: int, threshold: int, noun: str = "secret") -> None:
    """The reference's rules for ``secret_shares`` and ``secret_threshold``
    (``noun="recovery"``: the same rules for ``recovery_shares``/``recovery_threshold``)."""
    if shares < 1:
        raise InvalidRequestError(f"{noun} shares must be at least one")
    if threshold < 1:
        raise InvalidRequestError(f"{noun} threshold must be at least one")
    if shares > 1 and threshold == 1:
        raise InvalidRequestError(f"{noun} threshold must be greater than one for multiple shares")
    if shares > 255:
        raise InvalidRequestError(f"{noun} shares must be less than 256")
    if threshold > 255:
        raise InvalidRequestError(f"{noun} threshold must be less than 256")
    if threshold > shares:
        raise InvalidRequestError(f"{noun} threshold cannot be larger than {noun} shares")
