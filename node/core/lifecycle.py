"""Initialisation, unsealing and sealing of one node's barrier."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from node.barrier.barrier import Barrier
from node.seal.base import AutoSeal, Seal
from node.seal.config import SealConfig, SealTypeMismatchError, validate_shares
from node.seal.keys import decode_key, encode_b64, encode_hex
from node.seal.progress import ShareCollector
from sdk.errors import AlreadyInitializedError, InvalidRequestError, NotInitializedError

__all__ = ["Lifecycle", "new_cluster_id"]

log = logging.getLogger("coffer.core")


class Lifecycle:
    """Owns the seal and the unseal progress; the core hooks into transitions."""

    def __init__(self, barrier: Barrier, seal: Seal) -> None:
        self.barrier = barrier
        self.seal = seal
        self._lock = asyncio.Lock()
        self._progress: ShareCollector | None = None
        self._config: SealConfig | None = None
        self._share_config: SealConfig | None = None
        #: Runs with the reconstructed root key before the barrier opens; Raft
        #: storage starts its replica here (the transport secret derives from it).
        self.before_unseal: Callable[[bytes], Awaitable[None]] | None = None

    async def seal_config(self) -> SealConfig | None:
        if self._config is None:
            self._config = await self.seal.config()
        return self._config

    async def share_config(self) -> SealConfig | None:
        """The operators' shares: unseal keys under Shamir, recovery keys under an HSM."""
        if self._share_config is None:
            self._share_config = await self.seal.share_config()
        return self._share_config

    @property
    def auto_seal(self) -> AutoSeal | None:
        """The seal, when it unseals by itself (an HSM); ``None`` under Shamir."""
        return self.seal if isinstance(self.seal, AutoSeal) else None

    async def initialized(self) -> bool:
        return await self.seal_config() is not None

    async def _check_stored_type(self) -> SealConfig:
        config = await self.seal_config()
        if config is None:
            raise NotInitializedError()
        if config.type != self.seal.type:
            raise SealTypeMismatchError(
                f"storage was initialized with seal type {config.type} but this server runs "
                f"seal type {self.seal.type}: start it with the matching seal configuration "
                "(seal migration is not supported by this build)"
            )
        return config

    @property
    def progress(self) -> ShareCollector | None:
        return self._progress

    async def initialize(
        self, shares: int, threshold: int, recovery_shares: int = 0, recovery_threshold: int = 0
    ) -> tuple[list[str], list[str], bytes]:
        """Create the seal and keyring; returns the encoded shares and the root key.

        The shares are the recovery shares under an HSM seal, which takes only
        ``recovery_*`` (and Shamir only ``secret_*``), as the reference.
        """
        misplaced = _misplaced(
            self.seal.recovery, shares, threshold, recovery_shares, recovery_threshold
        )
        if misplaced:
            raise InvalidRequestError(
                f"parameters {misplaced} not applicable to seal type {self.seal.type}"
            )
        if self.seal.recovery:
            validate_shares(recovery_shares, recovery_threshold, noun="recovery")
            shares, threshold = recovery_shares, recovery_threshold
        else:
            validate_shares(shares, threshold)
        async with self._lock:
            if await self.initialized():
                raise AlreadyInitializedError("Coffer is already initialized")
            result = await self.seal.initialize(shares, threshold)
            await self.barrier.initialize(result.root_key)
            self._config = self._share_config = None
            log.info("initialized", extra={"event": "core.initialized", "parts": shares})
            return (
                [encode_hex(s) for s in result.shares],
                [encode_b64(s) for s in result.shares],
                result.root_key,
            )

    async def submit_share(self, key: str) -> bool:
        """Add one share; returns True when the barrier became unsealed."""
        config = await self._check_stored_type()
        if self.seal.recovery:
            raise InvalidRequestError(
                f"this server is sealed by its HSM (seal type {self.seal.type}) and unseals "
                "itself; recovery keys authorise operations but cannot unseal it"
            )
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

    async def unseal_with_stored_key(self) -> bool:
        """Auto-unseal: the HSM decrypts the stored root key. True when it unsealed now."""
        seal = self.auto_seal
        assert seal is not None, "only an HSM seal unseals by itself"
        await self._check_stored_type()
        async with self._lock:
            if not self.barrier.sealed:
                return False
            self._progress = None
            root_key = await seal.stored_root_key()
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


def _misplaced(
    recovery: bool, shares: int, threshold: int, recovery_shares: int, recovery_threshold: int
) -> str:
    """The init parameters that belong to the other kind of seal, comma-separated."""
    if recovery:
        given = {"secret_shares": shares, "secret_threshold": threshold}
    else:
        given = {"recovery_shares": recovery_shares, "recovery_threshold": recovery_threshold}
    return ",".join(name for name, value in given.items() if value)


def new_cluster_id() -> str:
    return str(uuid.uuid4())
