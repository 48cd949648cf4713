"""Producing a token from a quorum of unseal keys and a one-time password.

Used for ``sys/generate-root`` now and for DR operation tokens later: the
token is XORed with an OTP the operator holds, so the server never returns
it in the clear.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from node.base62 import random_base62
from node.seal.progress import ShareCollector
from node.tokens.ids import TOKEN_LENGTH
from sdk.errors import InvalidRequestError

__all__ = ["TokenGeneration", "encode_with_otp"]

RecoverRootKey = Callable[[list[bytes]], Awaitable[bytes]]
MintToken = Callable[[], Awaitable[str]]


def encode_with_otp(token: str, otp: str) -> str:
    token_bytes, otp_bytes = token.encode(), otp.encode("utf-8", "surrogatepass")
    if len(token_bytes) != len(otp_bytes):
        raise InvalidRequestError("one-time password length does not match the token length")
    mixed = bytes(a ^ b for a, b in zip(token_bytes, otp_bytes, strict=True))
    return base64.b64encode(mixed).decode().rstrip("=")


@dataclass(slots=True)
class _Attempt:
    collector: ShareCollector
    otp: str
    server_generated: bool


class TokenGeneration:
    """One generation process at a time; key shares collected towards the threshold."""

    def __init__(self, recover: RecoverRootKey, mint: MintToken) -> None:
        self._recover = recover
        self._mint = mint
        self._attempt: _Attempt | None = None

    def status(self, required: int, *, encoded: str = "", otp: str = "") -> dict[str, Any]:
        attempt = self._attempt
        return {
            "nonce": attempt.collector.nonce if attempt else "",
            "started": attempt is not None or bool(encoded),
            "progress": attempt.collector.progress if attempt else (required if encoded else 0),
            "required": required,
            "complete": bool(encoded),
            "encoded_token": encoded,
            "encoded_root_token": encoded,
            "pgp_fingerprint": "",
            "otp": otp,
            "otp_length": TOKEN_LENGTH,
        }

    def start(self, required: int, otp: str = "", pgp_key: str = "") -> dict[str, Any]:
        if self._attempt is not None:
            raise InvalidRequestError("root generation already in progress")
        if pgp_key:
            raise InvalidRequestError("pgp_key is not supported; use the one-time password flow")
        if otp and (len(otp) != TOKEN_LENGTH or not otp.isascii()):
            # ASCII, so its length in bytes (what the token is XORed with) is its length
            raise InvalidRequestError(f"otp must be {TOKEN_LENGTH} ASCII characters long")
        generated = not otp
        chosen = otp or random_base62(TOKEN_LENGTH)
        self._attempt = _Attempt(ShareCollector(required), chosen, generated)
        return self.status(required, otp=chosen if generated else "")

    def cancel(self) -> None:
        self._attempt = None

    async def update(self, share: bytes, nonce: str, required: int) -> dict[str, Any]:
        attempt = self._attempt
        if attempt is None:
            raise InvalidRequestError("no root generation in progress")
        if not nonce:
            raise InvalidRequestError("missing nonce")
        if nonce != attempt.collector.nonce:
            raise InvalidRequestError(
                f"incorrect nonce supplied; nonce for this root generation operation is "
                f"{attempt.collector.nonce}"
            )
        attempt.collector.add(share)
        if not attempt.collector.complete:
            return self.status(required)
        try:
            await self._recover(attempt.collector.shares)
        finally:
            self._attempt = None
        token = await self._mint()
        return self.status(required, encoded=encode_with_otp(token, attempt.otp))
