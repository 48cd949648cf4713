"""The security barrier: encrypts on the way down, decrypts on the way up.

Decrypted reads are kept in a ``ReadCache`` (see ``node.barrier.cache`` for
its contract): writes through the barrier invalidate their keys, the cluster
invalidates the keys of every applied Raft entry (``invalidate``), and seal,
unseal and keyring changes clear it, so no plaintext outlives the unsealed
state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence

from node.barrier.aead import (
    DecryptionError,
    frame_term,
    open_sealed,
    open_with,
    seal_value,
    seal_with,
)
from node.barrier.cache import DEFAULT_CACHE_SIZE, MISS, ReadCache
from node.barrier.keyring import Keyring
from node.barrier.readonly import check_writable, check_writes
from node.barrier.seal_wrap import MAGIC, SealWrapper
from sdk.errors import SealedError, StorageError
from sdk.physical import Check, Delete, PhysicalBackend, Put, TxnOp
from sdk.record import record

log = logging.getLogger("coffer.barrier")

__all__ = ["KEYRING_PATH", "Barrier", "StoredValue"]

#: Physical key of the keyring, encrypted under the root key (not the keyring).
KEYRING_PATH = "core/keyring"


@record
class StoredValue:
    """A decrypted value and the physical revision it was read at."""

    key: str
    value: bytes
    revision: int


class Barrier:
    """AES-256-GCM over a physical backend, with a rotating keyring.

    Sealed means the barrier holds no keys: every read and write raises
    ``SealedError``. The root key only ever lives in memory while unsealed.
    """

    def __init__(
        self,
        physical: PhysicalBackend,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        disable_cache: bool = False,
    ) -> None:
        self.physical = physical
        self._root_key: bytes | None = None
        self._keyring: Keyring | None = None
        self._encryptions: dict[int, int] = {}
        self._rotate_lock = asyncio.Lock()
        self.cache: ReadCache[StoredValue] = ReadCache(cache_size, enabled=not disable_cache)
        #: The HSM that seal-wraps values (``node.barrier.seal_wrap``); ``None`` under
        #: Shamir, where a mount's ``seal_wrap`` is a no-op, as in the reference.
        self.wrapper: SealWrapper | None = None
        #: Unwraps what ``wrapper`` cannot: the HSM of a seal migrated away from.
        self.unwrapper: SealWrapper | None = None

    @property
    def sealed(self) -> bool:
        return self._keyring is None

    async def initialize(self, root_key: bytes) -> None:
        """Create the first keyring and store it under ``root_key``."""
        keyring = Keyring.new()
        await self._store_keyring(root_key, keyring, expect=0)
        self.cache.clear()
        self._root_key, self._keyring = root_key, keyring

    async def unseal(self, root_key: bytes) -> None:
        entry = await self.physical.get(KEYRING_PATH)
        if entry is None:
            raise StorageError("keyring missing from storage")
        keyring = await self._open_keyring(root_key, entry.value)
        self.cache.clear()
        self._root_key, self._keyring = root_key, keyring

    def seal(self) -> None:
        self._root_key = None
        self._keyring = None
        self.cache.clear()  # plaintext must not outlive the unsealed state

    async def rotate(self) -> int:
        """Add a key term; new writes use it, older terms still decrypt."""
        async with self._rotate_lock:
            root_key, _ = self._keys()
            entry = await self.physical.get(KEYRING_PATH)
            current = await self._open_keyring(root_key, entry.value) if entry else self._keys()[1]
            rotated = current.rotated()
            await self._store_keyring(root_key, rotated, expect=entry.revision if entry else 0)
            self.cache.clear()
            self._keyring = rotated
            return rotated.active.term

    async def rewrite_keyring(self) -> None:
        """Store the keyring again, wrapped as the seal in force says (after a seal
        migration or an HSM key rotation), so the old seal is no longer needed for it."""
        async with self._rotate_lock:
            root_key, keyring = self._keys()
            entry = await self.physical.get(KEYRING_PATH)
            await self._store_keyring(root_key, keyring, expect=entry.revision if entry else 0)

    async def reload_keyring(self) -> None:
        """Re-read the keyring after another node rotated it."""
        root_key, _ = self._keys()
        await self.unseal(root_key)

    def key_status(self) -> tuple[int, str, int]:
        """Active term, its install time and encryptions under it since unseal."""
        _, keyring = self._keys()
        active = keyring.active
        return active.term, active.install_time, self._encryptions.get(active.term, 0)

    # -- read cache -----------------------------------------------------------

    def invalidate(self, keys: Iterable[str]) -> None:
        """Forget cached reads of ``keys`` (physical paths) changed behind our back."""
        self.cache.invalidate(keys)

    def invalidate_all(self) -> None:
        self.cache.clear()

    def read_generation(self) -> int | None:
        """A number that changes whenever a stored value may have changed (the read
        cache's epoch), or None with the cache off. A value read while it held
        still is current: what callers memoising reads compare."""
        cache = self.cache
        return cache.epoch if cache.enabled else None

    # -- storage ------------------------------------------------------------

    async def get(self, key: str) -> StoredValue | None:
        self._keys()  # sealed must refuse reads even of absent keys
        cache = self.cache
        if not cache.enabled:
            return await self._read(key)
        found = cache.lookup(key)
        if found is not MISS:
            return found
        epoch = cache.epoch  # taken before the read: see ReadCache
        value = await self._read(key)
        cache.store(key, value, epoch)
        return value

    async def put(self, key: str, value: bytes, *, wrap: bool = False) -> int:
        """``wrap``: the frame is wrapped by the HSM too (when there is one)."""
        check_writable(key)  # also for writes that bypass the views (see readonly)
        frame = await self._wrap(key, self._encrypt(key, value), wrap)
        keyring = self._keyring
        try:
            revision = await self.physical.put(key, frame)
        finally:  # also on failure: the write may have landed (an unconfirmed Raft write)
            self.cache.invalidate((key,))
        if self._keyring is keyring:  # not sealed (or rotated) while it was written
            self.cache.remember_write(key, frame, value)
        return revision

    async def delete(self, key: str) -> None:
        check_writable(key)
        self._keys()
        self.cache.forget_write(key)
        try:
            await self.physical.delete(key)
        finally:
            self.cache.invalidate((key,))

    async def list(self, prefix: str) -> list[str]:
        self._keys()
        return await self.physical.list(prefix)

    async def commit(
        self, ops: Sequence[TxnOp], *, wrap: Callable[[str], bool] | None = None
    ) -> int:
        """``wrap``: which of the keys are wrapped by the HSM too (when there is one)."""
        encrypted: list[TxnOp] = []
        check_writes(ops)
        # Asked per key only when there is an HSM to wrap with (most writes: none).
        wraps = wrap if self.wrapper is not None else None
        cache = self.cache
        written: list[tuple[str, bytes, bytes]] = []
        for op in ops:
            if isinstance(op, Put):
                frame = self._encrypt(op.key, op.value)
                if wraps is not None and wraps(op.key):
                    frame = await self._wrap(op.key, frame, True)
                encrypted.append(Put(op.key, frame, op.expect))
                written.append((op.key, frame, op.value))
            else:
                self._keys()
                if isinstance(op, Delete):
                    cache.forget_write(op.key)
                encrypted.append(op)
        keyring = self._keyring
        try:
            revision = await self.physical.commit(encrypted)
        finally:
            cache.invalidate(op.key for op in ops if not isinstance(op, Check))
        if self._keyring is keyring:  # not sealed (or rotated) while it was written
            for key, frame, value in written:
                cache.remember_write(key, frame, value)
        return revision

    # -- frames for cross-cluster replication -----------------------------------

    def encrypt_entry(self, key: str, value: bytes) -> bytes:
        """The stored frame of ``value`` at ``key`` without writing it: a replication
        primary re-encrypts a filtered table, or a secondary's state, for a cluster
        sharing this keyring (``node.replication``)."""
        return self._encrypt(key, value)

    def decrypt_entry(self, key: str, frame: bytes) -> bytes:
        """The plaintext of a stored (not seal-wrapped) frame of ``key``."""
        return self._decrypt(key, frame)

    # -- internals ------------------------------------------------------------

    def _keys(self) -> tuple[bytes, Keyring]:
        if self._root_key is None or self._keyring is None:
            raise SealedError()
        return self._root_key, self._keyring

    async def _read(self, key: str) -> StoredValue | None:
        entry = await self.physical.get(key)
        if entry is None:
            return None
        # Still exactly what this node wrote (see ReadCache): its plaintext, no AES-GCM.
        plaintext = self.cache.written(key, entry.value)
        if plaintext is None:
            plaintext = self._decrypt(key, await self._unwrap(key, entry.value))
        return StoredValue(key, plaintext, entry.revision)

    async def _unwrap(self, key: str, frame: bytes) -> bytes:
        if not frame.startswith(MAGIC):
            return frame
        unwrapper = self.wrapper or self.unwrapper
        if unwrapper is None:
            raise StorageError(f"{key} is seal-wrapped and this server has no HSM seal")
        return await unwrapper.decrypt(frame[len(MAGIC) :], key)

    async def _wrap(self, key: str, frame: bytes, wrap: bool) -> bytes:
        if not wrap or self.wrapper is None:
            return frame
        return MAGIC + await self.wrapper.encrypt(frame, key)

    def _encrypt(self, key: str, value: bytes) -> bytes:
        _, keyring = self._keys()
        active = keyring.active
        self._encryptions[active.term] = self._encryptions.get(active.term, 0) + 1
        return seal_with(active.cipher, active.term, key, value)

    def _decrypt(self, key: str, frame: bytes) -> bytes:
        _, keyring = self._keys()
        try:
            term = keyring.term(frame_term(frame))
            if term is None:
                raise DecryptionError("unknown key term")
            return open_with(term.cipher, key, frame)
        except DecryptionError as exc:
            # The key goes to the operator's log, not to the client (it names internal ids).
            log.error(
                "stored value failed to decrypt",
                extra={"event": "barrier.decrypt_failed", "storage_key": key},
            )
            raise StorageError("a stored value failed to decrypt") from exc

    async def _store_keyring(self, root_key: bytes, keyring: Keyring, expect: int) -> None:
        frame = seal_value(root_key, 0, KEYRING_PATH, keyring.serialize())
        # Under an HSM seal the keyring is always seal-wrapped, as in the reference.
        frame = await self._wrap(KEYRING_PATH, frame, True)
        await self.physical.commit([Put(KEYRING_PATH, frame, expect)])

    async def _open_keyring(self, root_key: bytes, frame: bytes) -> Keyring:
        frame = await self._unwrap(KEYRING_PATH, frame)
        try:
            return Keyring.deserialize(open_sealed(root_key, KEYRING_PATH, frame))
        except DecryptionError as exc:
            raise StorageError("keyring does not open with this root key") from exc
