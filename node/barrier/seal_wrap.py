"""Seal wrap: barrier frames wrapped once more by the HSM (Vault Enterprise's seal wrap).

Layering as the reference: the barrier encrypts first, then the seal wraps the
barrier's frame, so the bytes in storage are an HSM blob that the barrier key
alone cannot open. A wrapped value is marked with ``MAGIC``, so any reader (a
view, the mount table deleting a mount, a Raft invalidation) knows to unwrap
it, and entries written before a mount's wrapping began still read.

Which keys are wrapped is the mount's business: its storage view
(``SealWrapStorage``) decides per key, from the mount's ``seal_wrap`` flag and
the paths its engine declares (``seal_wrap_storage``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from sdk.physical import TxnOp

if TYPE_CHECKING:
    from node.barrier.barrier import Barrier, StoredValue

__all__ = ["MAGIC", "SealWrapStorage", "SealWrapper"]

#: Prefix of a seal-wrapped value. As a barrier frame's key term it would be term
#: 0x00535701 (5.4 million rotations), which no keyring reaches.
MAGIC = b"\x00SW\x01"


class SealWrapper(Protocol):
    """The HSM seal's two operations (``node.seal.pkcs11_seal.Pkcs11Seal``)."""

    async def encrypt(self, plaintext: bytes, path: str) -> bytes: ...

    async def decrypt(self, raw: bytes, path: str) -> bytes: ...


class SealWrapStorage:
    """The storage under one mount's view: the barrier, wrapping the mount's keys.

    ``every`` is the mount's ``seal_wrap = true``. The engine's own seal-wrapped
    paths are declared once it is built (``declare``), after its storage: they
    are the reference's ``SealWrapStorage``, each an exact key, a prefix when
    it ends in ``/``, or ``*`` for every key.
    """

    def __init__(self, barrier: Barrier, prefix: str, *, every: bool) -> None:
        self._barrier = barrier
        self._prefix = prefix
        self._every = every
        self._declared: tuple[str, ...] = ()

    def declare(self, paths: Sequence[str]) -> None:
        self._declared = tuple(paths)

    def _wraps(self, key: str) -> bool:
        if self._every:
            return True
        relative = key.removeprefix(self._prefix)
        return any(
            path == "*" or relative == path or (path.endswith("/") and relative.startswith(path))
            for path in self._declared
        )

    async def get(self, key: str) -> StoredValue | None:
        return await self._barrier.get(key)  # unwrapping is decided by the stored marker

    def read_generation(self) -> int | None:
        return self._barrier.read_generation()

    async def put(self, key: str, value: bytes) -> int:
        return await self._barrier.put(key, value, wrap=self._wraps(key))

    async def delete(self, key: str) -> None:
        await self._barrier.delete(key)

    async def list(self, prefix: str) -> list[str]:
        return await self._barrier.list(prefix)

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        return await self._barrier.commit(ops, wrap=self._wraps)
