"""The Shamir seal: the unseal key is split into shares held by operators."""

from __future__ import annotations

import os
from dataclasses import dataclass

from node.barrier.aead import DecryptionError, open_sealed, seal_value
from node.seal.config import SEAL_CONFIG_PATH, SealConfig
from node.seal.shamir import ShamirError, combine, split
from sdk.errors import InvalidRequestError, StorageError
from sdk.physical import Delete, PhysicalBackend, Put

__all__ = ["ROOT_KEY_PATH", "InitResult", "ShamirSeal"]

#: Physical key of the root key, encrypted under the unseal key.
ROOT_KEY_PATH = "core/root-key"
#: Written by the HSM seal (``pkcs11_seal``); removed when a store migrates to Shamir.
RECOVERY_CONFIG_PATH = "core/recovery-config"
RECOVERY_KEY_PATH = "core/recovery-key"


@dataclass(frozen=True, slots=True)
class InitResult:
    shares: list[bytes]
    root_key: bytes

    def __repr__(self) -> str:
        return f"InitResult(shares={len(self.shares)})"


class ShamirSeal:
    """Protects the root key with an unseal key that only exists as shares."""

    type = "shamir"
    #: The shares are unseal keys.
    recovery = False

    def __init__(self, physical: PhysicalBackend) -> None:
        self._physical = physical

    async def config(self) -> SealConfig | None:
        entry = await self._physical.get(SEAL_CONFIG_PATH)
        return SealConfig.deserialize(entry.value) if entry else None

    async def share_config(self) -> SealConfig | None:
        """The unseal key shares are described by the seal config itself."""
        return await self.config()

    async def close(self) -> None:
        """Nothing to release: the unseal key is never held."""

    async def initialize(self, shares: int, threshold: int) -> InitResult:
        unseal_key = os.urandom(32)
        root_key = os.urandom(32)
        parts = [unseal_key] if shares == 1 else split(unseal_key, shares, threshold)
        config = SealConfig(self.type, shares, threshold)
        await self._physical.commit(
            [
                Put(SEAL_CONFIG_PATH, config.serialize(), expect=0),
                Put(ROOT_KEY_PATH, seal_value(unseal_key, 0, ROOT_KEY_PATH, root_key), expect=0),
            ]
        )
        return InitResult(parts, root_key)

    async def root_key_from_shares(self, parts: list[bytes]) -> bytes:
        """Combine shares and open the stored root key; raises on a bad quorum."""
        try:
            unseal_key = parts[0] if len(parts) == 1 else combine(parts)
        except ShamirError as exc:
            raise InvalidRequestError(f"invalid unseal key: {exc}") from exc
        entry = await self._physical.get(ROOT_KEY_PATH)
        if entry is None:
            raise StorageError("root key missing from storage")
        try:
            return open_sealed(unseal_key, ROOT_KEY_PATH, entry.value)
        except DecryptionError as exc:
            raise InvalidRequestError(
                "unseal failed, invalid key: the keys do not combine into the unseal key"
            ) from exc

    async def replace_share_secret(
        self, old_parts: list[bytes], secret: bytes, shares: int, threshold: int
    ) -> None:
        """Rekey: the root key re-encrypted under a new unseal key ``secret``."""
        root_key = await self.root_key_from_shares(old_parts)
        await self._physical.commit(
            [
                Put(SEAL_CONFIG_PATH, SealConfig(self.type, shares, threshold).serialize()),
                Put(ROOT_KEY_PATH, seal_value(secret, 0, ROOT_KEY_PATH, root_key)),
            ]
        )

    async def adopt(self, root_key: bytes, secret: bytes, shares: int, threshold: int) -> None:
        """Seal migration to Shamir: ``secret`` (the old recovery key) becomes the unseal key.

        The HSM-era entries are removed, so the store is a plain Shamir store.
        """
        await self._physical.commit(
            [
                Put(SEAL_CONFIG_PATH, SealConfig(self.type, shares, threshold).serialize()),
                Put(ROOT_KEY_PATH, seal_value(secret, 0, ROOT_KEY_PATH, root_key)),
                Delete(RECOVERY_CONFIG_PATH),
                Delete(RECOVERY_KEY_PATH),
            ]
        )
