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
from node.seal.rekey import RekeyOperation
from node.seal.shamir import combine
from sdk.errors import AlreadyInitializedError, InvalidRequestError, NotInitializedError

__all__ = ["Lifecycle", "new_cluster_id"]

log = logging.getLogger("coffer.core")


class Lifecycle:
    """Owns the seal and the unseal progress; the core hooks into transitions."""

    def __init__(self, barrier: Barrier, seal: Seal, migrate_from: Seal | None = None) -> None:
        self.barrier = barrier
        self.seal = seal
        #: The seal a store may be migrated from under this configuration (see
        #: ``node.seal.factory.migration_source``); a migration is under way when
        #: the stored seal config is of its type.
        self.migrate_from = migrate_from
        self._lock = asyncio.Lock()
        self._progress: ShareCollector | None = None
        self._config: SealConfig | None = None
        self._share_config: SealConfig | None = None
        #: Runs with the reconstructed root key before the barrier opens; Raft
        #: storage starts its replica here (the transport secret derives from it).
        self.before_unseal: Callable[[bytes], Awaitable[None]] | None = None
        #: Replaces the operators' shares (``sys/rekey`` or ``sys/rekey-recovery-key``).
        self.rekey = RekeyOperation(seal, on_installed=self.forget_configs)

    def forget_configs(self) -> None:
        """Drop the cached seal and share configs: they are read again from storage."""
        self._config = self._share_config = None

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

    async def migration(self) -> bool:
        """Whether the store is under the old seal of a configured seal migration."""
        config = await self.seal_config()
        old = self.migrate_from
        return config is not None and old is not None and config.type == old.type != self.seal.type

    async def _check_stored_type(self) -> SealConfig:
        config = await self.seal_config()
        if config is None:
            raise NotInitializedError()
        if await self.migration():
            return config
        if config.type != self.seal.type:
            raise SealTypeMismatchError(
                f"storage was initialized with seal type {config.type} but this server runs "
                f"seal type {self.seal.type}: start it with the matching seal configuration "
                "(or, to migrate the seal, the old seal's stanza as Vault's migration needs it)"
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

    async def submit_share(self, key: str, migrate: bool = False) -> bool:
        """Add one share; returns True when the barrier became unsealed.

        During a seal migration (``migrate`` required) the shares are the old seal's:
        once they are a quorum the root key moves to the new seal.
        """
        await self._check_stored_type()
        migrating = await self.migration()
        if migrating and not migrate:
            raise InvalidRequestError(
                "a seal migration is in progress: unseal with migrate=true (-migrate) "
                "using the keys of the old seal"
            )
        if migrate and not migrating:
            raise InvalidRequestError("no seal migration is configured: migrate=true is not valid")
        if migrating:
            return await self._migrate_with(decode_key(key))
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

    async def _migrate_with(self, share: bytes) -> bool:
        old = self.migrate_from
        assert old is not None
        async with self._lock:
            if not self.barrier.sealed:
                return False
            shares = await old.share_config()
            if shares is None:
                raise NotInitializedError()
            if self._progress is None:
                self._progress = ShareCollector(shares.secret_threshold)
            self._progress.add(share)
            if not self._progress.complete:
                return False
            parts, self._progress = self._progress.shares, None
            if isinstance(old, AutoSeal):
                await old.connect()
            root_key = await old.root_key_from_shares(parts)
            secret = parts[0] if len(parts) == 1 else combine(parts)
            await self.seal.adopt(root_key, secret, shares.secret_shares, shares.secret_threshold)
            self.forget_configs()
            log.info(
                "seal migrated",
                extra={"event": "seal.migrated", "from": old.type, "to": self.seal.type},
            )
            if self.before_unseal is not None:
                await self.before_unseal(root_key)
            await self.barrier.unseal(root_key)
            await self.barrier.rewrite_keyring()  # wrapped by the new seal, or no longer
            return True

    async def share_config_for_status(self) -> SealConfig | None:
        """The shares ``seal-status`` counts: the old seal's during a migration."""
        if await self.migration() and self.migrate_from is not None:
            return await self.migrate_from.share_config()
        return await self.share_config()

    async def unseal_with_stored_key(self) -> bool:
        """Auto-unseal: the HSM decrypts the stored root key. True when it unsealed now."""
        seal = self.auto_seal
        assert seal is not None, "only an HSM seal unseals by itself"
        await self._check_stored_type()
        if await self.migration():
            raise InvalidRequestError(
                "a seal migration is in progress: unseal with -migrate using the old keys"
            )
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
        # Another node may rekey or migrate meanwhile: read the configs afresh next time.
        self.forget_configs()
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
