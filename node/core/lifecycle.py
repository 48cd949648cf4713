"""Initialisation, unsealing and sealing of one node's barrier."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from node.barrier.barrier import Barrier
from node.errors import AlreadyInitializedError, InvalidRequestError, NotInitializedError
from node.seal.config import SealConfig, validate_shares
from node.seal.keys import decode_key, encode_b64, encode_hex
from node.seal.progress import ShareCollector
from node.seal.shamir_seal import ShamirSeal

__all__ = ["Lifecycle", "new_cluster_id"]

log = logging.getLogger("coffer.core")


class Lifecycle:
    """Owns the seal and the unseal progress; the core hooks into transitions."""

    def __init__(self, barrier: Barrier, seal: ShamirSeal) -> None:
        self.barrier = barrier
        self.seal = seal
        self._lock = asyncio.Lock()
        self._progress: ShareCollector | None = None
        self._config: SealConfig | None = None
        #: Runs with the reconstructed root key before the barrier opens; Raft
        #: storage starts its replica here (the transport secret derives from it).
        self.before_unseal: Callable[[bytes], Awaitable[None]] | None = None

    async def seal_config(self) -> SealConfig | None:
        if self._config is None:
            self._config = await self.seal.config()
        return self._config

    async def initialized(self) -> bool:
        return await self.seal_config() is not None

    @property
    def progress(self) -> ShareCollector | None:
        return self._progress

    async def initialize(self, shares: int, threshold: int) -> tuple[list[str], list[str], bytes]:
        """Create the seal and keyring; returns the encoded shares and the root key."""
        validate_shares(shares, threshold)
        async with self._lock:
            if await self.initialized():
                raise AlreadyInitializedError("Coffer is already initialized")
            result = await self.seal.initialize(shares, threshold)
            await self.barrier.initialize(result.root_key)
            self._config = None
            log.info("initialized", extra={"event": "core.initialized", "parts": shares})
            return (
                [encode_hex(s) for s in result.shares],
                [encode_b64(s) for s in result.shares],
                result.root_key,
            )

    async def submit_share(self, key: str) -> bool:
        """Add one share; returns True when the barrier became unsealed."""
        config = await self.seal_config()
        if config is None:
            raise NotInitializedError()
        share = decode_key(key)
        async with self._lock:
            if not self.barrier.sealed:
                return False
            if self._progress is None:
                self._progress = ShareCollector(config.secret_threshold)
            self._progress.add(share)
            if not self._progress.complete:
                return False
            parts, self._progress = self._progress.shares, None
            root_key = await self.seal.root_key_from_shares(parts)
            if self.before_unseal is not None:
                await self.before_unseal(root_key)
            await self.barrier.unseal(root_key)
            return True

    def reset_progress(self) -> None:
        if not self.barrier.sealed:
            raise InvalidRequestError("Coffer is unsealed")
        self._progress = None

    def seal_barrier(self) -> None:
        self._progress = None
        self.barrier.seal()


def new_cluster_id() -> str:
    return str(uuid.uuid4())
