"""The PKCS#11 seal: the root key is stored encrypted by an HSM key; recovery keys.

At init one root key is made, encrypted by the HSM and stored at
``core/root-key``; the server unseals itself from it at every start. The
operators get *recovery keys* instead of unseal keys: Shamir shares of a
random recovery key, itself stored HSM-encrypted at ``core/recovery-key``.
They authorise operations (generate-root) and never unseal.

Every HSM call blocks, so each runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import hmac
import os

from node.seal.config import SEAL_CONFIG_PATH, SealConfig
from node.seal.hsm_blob import decode_blob, encode_blob
from node.seal.pkcs11_settings import Pkcs11Settings
from node.seal.pkcs11_token import Pkcs11Token
from node.seal.shamir import ShamirError, combine, split
from node.seal.shamir_seal import (
    RECOVERY_CONFIG_PATH,
    RECOVERY_KEY_PATH,
    ROOT_KEY_PATH,
    InitResult,
)
from sdk.errors import InvalidRequestError, StorageError
from sdk.physical import PhysicalBackend, Put

__all__ = ["RECOVERY_CONFIG_PATH", "RECOVERY_KEY_PATH", "Pkcs11Seal"]


class Pkcs11Seal:
    """Root key and recovery key encrypted by the HSM; operators hold recovery shares."""

    type = "pkcs11"
    #: The shares handed out are recovery keys: they authorise, they do not unseal.
    recovery = True

    def __init__(self, physical: PhysicalBackend, settings: Pkcs11Settings) -> None:
        self._physical = physical
        self.settings = settings
        self.token = Pkcs11Token(settings)

    # -- the HSM, off the event loop ---------------------------------------------------

    async def connect(self) -> None:
        """Reach the token and its keys (generating them if allowed); raises why not."""
        await asyncio.to_thread(self.token.connect)

    async def close(self) -> None:
        await asyncio.to_thread(self.token.close)

    async def encrypt(self, plaintext: bytes, path: str) -> bytes:
        """An HSM blob of ``plaintext``, bound to the storage ``path`` it is written at."""
        blob = await asyncio.to_thread(self.token.encrypt, plaintext, path.encode())
        return encode_blob(blob)

    async def decrypt(self, raw: bytes, path: str) -> bytes:
        return await asyncio.to_thread(self.token.decrypt, decode_blob(raw), path.encode())

    # -- configuration -----------------------------------------------------------------------

    async def config(self) -> SealConfig | None:
        entry = await self._physical.get(SEAL_CONFIG_PATH)
        return SealConfig.deserialize(entry.value) if entry else None

    async def share_config(self) -> SealConfig | None:
        """The recovery shares' config: what ``seal-status`` and generate-root count."""
        entry = await self._physical.get(RECOVERY_CONFIG_PATH)
        return SealConfig.deserialize(entry.value) if entry else None

    # -- init, unseal, authorisation ---------------------------------------------------------

    async def initialize(self, shares: int, threshold: int) -> InitResult:
        """``shares``/``threshold`` are the recovery shares; the root key stays stored."""
        root_key, recovery_key = os.urandom(32), os.urandom(32)
        parts = [recovery_key] if shares == 1 else split(recovery_key, shares, threshold)
        await self.connect()
        sealed_root = await self.encrypt(root_key, ROOT_KEY_PATH)
        sealed_recovery = await self.encrypt(recovery_key, RECOVERY_KEY_PATH)
        await self._physical.commit(
            [
                Put(SEAL_CONFIG_PATH, SealConfig(self.type, 1, 1).serialize(), expect=0),
                Put(RECOVERY_CONFIG_PATH, SealConfig("shamir", shares, threshold).serialize()),
                Put(ROOT_KEY_PATH, sealed_root, expect=0),
                Put(RECOVERY_KEY_PATH, sealed_recovery),
            ]
        )
        return InitResult(parts, root_key)

    async def adopt(self, root_key: bytes, secret: bytes, shares: int, threshold: int) -> None:
        """Seal migration from Shamir: the root key goes under the HSM and ``secret`` (the
        old unseal key) becomes the recovery key, so the old unseal keys are the recovery keys.
        """
        await self.connect()
        sealed_root = await self.encrypt(root_key, ROOT_KEY_PATH)
        sealed_recovery = await self.encrypt(secret, RECOVERY_KEY_PATH)
        await self._physical.commit(
            [
                Put(SEAL_CONFIG_PATH, SealConfig(self.type, 1, 1).serialize()),
                Put(RECOVERY_CONFIG_PATH, SealConfig("shamir", shares, threshold).serialize()),
                Put(ROOT_KEY_PATH, sealed_root),
                Put(RECOVERY_KEY_PATH, sealed_recovery),
            ]
        )

    async def stored_root_key(self) -> bytes:
        """The root key, decrypted by the HSM: what auto-unseal runs on."""
        return await self.decrypt(await self._stored(ROOT_KEY_PATH), ROOT_KEY_PATH)

    async def root_key_from_shares(self, parts: list[bytes]) -> bytes:
        """Check a quorum of recovery shares, then return the stored root key.

        The shares prove the operators' authority (generate-root); the root key
        itself always comes from the HSM.
        """
        try:
            candidate = parts[0] if len(parts) == 1 else combine(parts)
        except ShamirError as exc:
            raise InvalidRequestError(f"invalid recovery key: {exc}") from exc
        recovery_key = await self.decrypt(await self._stored(RECOVERY_KEY_PATH), RECOVERY_KEY_PATH)
        if not hmac.compare_digest(candidate, recovery_key):
            raise InvalidRequestError(
                "invalid recovery key: the keys do not combine into the recovery key"
            )
        return await self.stored_root_key()

    async def replace_share_secret(
        self, old_parts: list[bytes], secret: bytes, shares: int, threshold: int
    ) -> None:
        """Recovery rekey: ``secret`` becomes the stored recovery key, split anew."""
        await self.root_key_from_shares(old_parts)
        sealed_recovery = await self.encrypt(secret, RECOVERY_KEY_PATH)
        await self._physical.commit(
            [
                Put(RECOVERY_CONFIG_PATH, SealConfig("shamir", shares, threshold).serialize()),
                Put(RECOVERY_KEY_PATH, sealed_recovery),
            ]
        )

    async def rewrap_stored_keys(self) -> bool:
        """Re-encrypt the stored keys with the current ``key_label`` if an older one made them.

        Run after an unseal; afterwards the old HSM key is no longer needed for them.
        Returns whether anything was rewritten.
        """
        rewritten = False
        for path in (ROOT_KEY_PATH, RECOVERY_KEY_PATH):
            raw = await self._stored(path)
            if decode_blob(raw).key_label == self.settings.key_label:
                continue
            plaintext = await self.decrypt(raw, path)
            await self._physical.put(path, await self.encrypt(plaintext, path))
            rewritten = True
        return rewritten

    async def _stored(self, path: str) -> bytes:
        entry = await self._physical.get(path)
        if entry is None:
            raise StorageError(f"{path} is missing from storage")
        return entry.value
