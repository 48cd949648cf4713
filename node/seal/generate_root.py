"""Producing a token from a quorum of key shares and a one-time password.

One engine for ``sys/generate-root`` and the DR operation token
(``sys/replication/dr/secondary/generate-operation-token``), as the
reference shares one: a :class:`Strategy` names what is minted at the
threshold. The token is XORed with an OTP the operator holds, so the server
never returns it in the clear. One attempt at a time, whatever its strategy
(the reference keeps one generation config per core).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from node.base62 import random_base62
from node.seal.progress import ShareCollector
from node.tokens.ids import TOKEN_LENGTH
from sdk.errors import InvalidRequestError

__all__ = ["Strategy", "TokenGeneration", "decode_with_otp", "encode_with_otp"]

RecoverRootKey = Callable[[list[bytes]], Awaitable[bytes]]
MintToken = Callable[[], Awaitable[str]]

#: Longest encoded token ``decode_with_otp`` reads (a token is 28 bytes; batch ones are longer).
MAX_ENCODED_LENGTH = 8192


@dataclass(frozen=True, slots=True)
class Strategy:
    """What one kind of generation mints once the shares check out.

    ``noun`` names the process in messages ("root generation"). The shares
    are always checked against this node's seal (unseal keys, or recovery
    keys under an HSM seal); only the minted token differs.
    """

    name: str
    noun: str
    mint: MintToken
    #: False once the strategy no longer applies (a DR secondary promoted): its
    #: attempt is then dropped instead of blocking every other generation.
    available: Callable[[], bool] = lambda: True


def encode_with_otp(token: str, otp: str) -> str:
    token_bytes, otp_bytes = token.encode(), otp.encode("utf-8", "surrogatepass")
    if len(token_bytes) != len(otp_bytes):
        raise InvalidRequestError("one-time password length does not match the token length")
    mixed = bytes(a ^ b for a, b in zip(token_bytes, otp_bytes, strict=True))
    return base64.b64encode(mixed).decode().rstrip("=")


def decode_with_otp(encoded: str, otp: str) -> str:
    """Invert :func:`encode_with_otp` (``sys/decode-token``); padded base64 is accepted.

    Errors never quote the inputs: both are secrets.
    """
    unpadded = encoded.strip().rstrip("=")
    if not unpadded or not otp:
        raise InvalidRequestError("encoded_token and otp are both required")
    if len(unpadded) > MAX_ENCODED_LENGTH or not unpadded.isascii():
        raise InvalidRequestError("encoded_token is not valid base64")
    try:
        mixed = base64.b64decode(unpadded + "=" * (-len(unpadded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError("encoded_token is not valid base64") from None
    otp_bytes = otp.encode("utf-8", "surrogatepass")
    if len(mixed) != len(otp_bytes):
        raise InvalidRequestError("one-time password length does not match the token length")
    try:
        return bytes(a ^ b for a, b in zip(mixed, otp_bytes, strict=True)).decode()
    except UnicodeDecodeError:
        raise InvalidRequestError("the decoded token is not text; is the otp right?") from None


@dataclass(slots=True)
class _Attempt:
    collector: ShareCollector
    otp: str
    server_generated: bool
    strategy: Strategy


class TokenGeneration:
    """One generation process at a time; key shares collected towards the threshold."""

    def __init__(self, recover: RecoverRootKey) -> None:
        self._recover = recover
        self._attempt: _Attempt | None = None

    def _own(self, strategy: Strategy) -> _Attempt | None:
        attempt = self._attempt
        return attempt if attempt is not None and attempt.strategy.name == strategy.name else None

    def status(
        self, strategy: Strategy, required: int, *, encoded: str = "", otp: str = ""
    ) -> dict[str, Any]:
        """The attempt of ``strategy`` (another strategy's attempt is not shown)."""
        attempt = self._own(strategy)
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

    def start(
        self, strategy: Strategy, required: int, otp: str = "", pgp_key: str = ""
    ) -> dict[str, Any]:
        if self._attempt is not None and not self._attempt.strategy.available():
            self._attempt = None
        if self._attempt is not None:
            raise InvalidRequestError(f"{self._attempt.strategy.noun} already in progress")
        if pgp_key:
            raise InvalidRequestError("pgp_key is not supported; use the one-time password flow")
        if otp and (len(otp) != TOKEN_LENGTH or not otp.isascii()):
            # ASCII, so its length in bytes (what the token is XORed with) is its length
            raise InvalidRequestError(f"otp must be {TOKEN_LENGTH} ASCII characters long")
        generated = not otp
        chosen = otp or random_base62(TOKEN_LENGTH)
        self._attempt = _Attempt(ShareCollector(required), chosen, generated, strategy)
        return self.status(strategy, required, otp=chosen if generated else "")

    def cancel(self, strategy: Strategy) -> None:
        if self._own(strategy) is not None:
            self._attempt = None

    async def update(
        self, strategy: Strategy, share: bytes, nonce: str, required: int
    ) -> dict[str, Any]:
        attempt = self._own(strategy)
        if attempt is None:
            raise InvalidRequestError(f"no {strategy.noun} in progress")
        if not nonce:
            raise InvalidRequestError("missing nonce")
        if nonce != attempt.collector.nonce:
            raise InvalidRequestError(
                f"incorrect nonce supplied; nonce for this {strategy.noun} operation is "
                f"{attempt.collector.nonce}"
            )
        attempt.collector.add(share)
        if not attempt.collector.complete:
            return self.status(strategy, required)
        try:
            await self._recover(attempt.collector.shares)
        finally:
            self._attempt = None
        token = await strategy.mint()
        return self.status(strategy, required, encoded=encode_with_otp(token, attempt.otp))
