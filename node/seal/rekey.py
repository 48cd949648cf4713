"""Rekey: replace the operators' shares (unseal keys, or recovery keys under an HSM).

The reference's flow (``sys/rekey/*`` and ``sys/rekey-recovery-key/*``):
``init`` states the new share count and threshold; ``update`` collects a
quorum of the *current* shares under the attempt's nonce; once complete, a
new secret is split and the new shares are returned. Without verification
the new secret is installed at once. With ``require_verification`` nothing
changes until a quorum of the *new* shares is entered at ``verify`` under a
second nonce: so shares that were lost in transit never replace working ones.

The seal does the storage part (``RekeyableSeal``); this module only holds
the attempt.
"""

from __future__ import annotations

import asyncio
import hmac
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from node.seal.config import SealConfig, validate_shares
from node.seal.keys import encode_b64, encode_hex
from node.seal.progress import ShareCollector
from node.seal.shamir import ShamirError, combine, split
from sdk.errors import InvalidRequestError

__all__ = ["RekeyOperation", "RekeyableSeal"]


class RekeyableSeal(Protocol):
    async def share_config(self) -> SealConfig | None: ...

    async def root_key_from_shares(self, parts: list[bytes]) -> bytes:
        """Raises ``InvalidRequestError`` unless ``parts`` are a quorum of the current shares."""
        ...

    async def replace_share_secret(
        self, old_parts: list[bytes], secret: bytes, shares: int, threshold: int
    ) -> None:
        """Make ``secret`` the one the operators' shares combine into (``shares``/``threshold``)."""
        ...


@dataclass(slots=True)
class _Attempt:
    shares: int
    threshold: int
    verification: bool
    collector: ShareCollector
    #: Set once the current shares are proven: the new secret and its shares.
    old_parts: list[bytes] = field(default_factory=list)
    secret: bytes = b""
    new_parts: list[bytes] = field(default_factory=list)
    verify: ShareCollector | None = None

    def __repr__(self) -> str:
        return f"_Attempt(shares={self.shares}, threshold={self.threshold})"


class RekeyOperation:
    """One rekey at a time, of one seal's operator shares."""

    def __init__(self, seal: RekeyableSeal, on_installed: Any = None) -> None:
        self._seal = seal
        self._on_installed = on_installed
        self._attempt: _Attempt | None = None
        self._lock = asyncio.Lock()

    async def _required(self) -> int:
        config = await self._seal.share_config()
        if config is None:
            raise InvalidRequestError("server is not yet initialized")
        return config.secret_threshold

    async def status(self) -> dict[str, Any]:
        attempt = self._attempt
        return {
            "nonce": attempt.collector.nonce if attempt else "",
            "started": attempt is not None,
            "t": attempt.threshold if attempt else 0,
            "n": attempt.shares if attempt else 0,
            "progress": attempt.collector.progress if attempt else 0,
            "required": await self._required(),
            "pgp_fingerprints": None,
            "backup": False,
            "verification_required": attempt.verification if attempt else False,
            "verification_nonce": attempt.verify.nonce if attempt and attempt.verify else "",
        }

    async def start(
        self, shares: int, threshold: int, *, require_verification: bool = False
    ) -> dict[str, Any]:
        validate_shares(shares, threshold)
        async with self._lock:
            if self._attempt is not None:
                raise InvalidRequestError("rekey already in progress")
            required = await self._required()
            self._attempt = _Attempt(
                shares, threshold, require_verification, ShareCollector(required)
            )
        return await self.status()

    def cancel(self) -> None:
        self._attempt = None

    def _current(self, nonce: str) -> _Attempt:
        attempt = self._attempt
        if attempt is None:
            raise InvalidRequestError("no rekey in progress")
        if not nonce:
            raise InvalidRequestError("missing nonce")
        return attempt

    async def update(self, share: bytes, nonce: str) -> dict[str, Any]:
        """One current share; at the quorum, the new shares (installed unless verified)."""
        async with self._lock:
            attempt = self._current(nonce)
            if attempt.secret:
                raise InvalidRequestError(
                    "rekey verification in progress: enter the new keys at the verify endpoint"
                )
            if nonce != attempt.collector.nonce:
                raise InvalidRequestError(
                    f"incorrect nonce supplied; nonce for this rekey operation is "
                    f"{attempt.collector.nonce}"
                )
            attempt.collector.add(share)
            if not attempt.collector.complete:
                return await self.status()
            parts = attempt.collector.shares
            try:
                await self._seal.root_key_from_shares(parts)
            except BaseException:
                self._attempt = None  # as the reference: a failed quorum ends the attempt
                raise
            secret = os.urandom(32)
            new_parts = (
                [secret]
                if attempt.shares == 1
                else split(secret, attempt.shares, attempt.threshold)
            )
            reply = {
                "nonce": attempt.collector.nonce,
                "complete": True,
                "keys": [encode_hex(p) for p in new_parts],
                "keys_base64": [encode_b64(p) for p in new_parts],
                "pgp_fingerprints": None,
                "backup": False,
                "verification_required": attempt.verification,
            }
            if not attempt.verification:
                self._attempt = None
                await self._install(parts, secret, attempt.shares, attempt.threshold)
                return reply
            attempt.old_parts, attempt.secret, attempt.new_parts = parts, secret, new_parts
            attempt.verify = ShareCollector(attempt.threshold)
            reply["verification_nonce"] = attempt.verify.nonce
            return reply

    def _verifying(self, nonce: str | None = None) -> tuple[_Attempt, ShareCollector]:
        attempt = self._attempt
        if attempt is None or attempt.verify is None:
            raise InvalidRequestError("no rekey verification in progress")
        if nonce is not None and nonce != attempt.verify.nonce:
            raise InvalidRequestError(
                f"incorrect nonce supplied; nonce for this verify operation is "
                f"{attempt.verify.nonce}"
            )
        return attempt, attempt.verify

    def verify_status(self) -> dict[str, Any]:
        attempt, collector = self._verifying()
        return {
            "nonce": collector.nonce,
            "started": True,
            "t": attempt.threshold,
            "n": attempt.shares,
            "progress": collector.progress,
        }

    def verify_cancel(self) -> dict[str, Any]:
        """Restart the verification (new nonce, no progress); the new shares stay pending."""
        attempt, _ = self._verifying()
        attempt.verify = ShareCollector(attempt.threshold)
        return self.verify_status()

    async def verify(self, share: bytes, nonce: str) -> dict[str, Any]:
        """One *new* share; at the quorum the new secret is installed."""
        async with self._lock:
            if not nonce:
                raise InvalidRequestError("missing nonce")
            attempt, collector = self._verifying(nonce)
            collector.add(share)
            if not collector.complete:
                return self.verify_status()
            try:
                secret = (
                    collector.shares[0] if len(collector.shares) == 1 else combine(collector.shares)
                )
            except ShamirError as exc:
                attempt.verify = ShareCollector(attempt.threshold)
                raise InvalidRequestError(f"invalid key: {exc}") from exc
            if not hmac.compare_digest(secret, attempt.secret):
                attempt.verify = ShareCollector(attempt.threshold)
                raise InvalidRequestError(
                    "the keys entered do not combine into the new key; verification restarted"
                )
            self._attempt = None
            await self._install(attempt.old_parts, secret, attempt.shares, attempt.threshold)
            return {"nonce": collector.nonce, "complete": True}

    async def _install(self, old: list[bytes], secret: bytes, shares: int, threshold: int) -> None:
        await self._seal.replace_share_secret(old, secret, shares, threshold)
        if self._on_installed is not None:
            self._on_installed()
