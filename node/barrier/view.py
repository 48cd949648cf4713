"""Prefix-jailed storage handed to each mount and subsystem.

Inside a read-only scope (a standby handling a request, see
``node.barrier.readonly``) every write through a view raises ``ReadOnlyError``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Protocol

from node.barrier.barrier import StoredValue
from node.barrier.readonly import check_writable, check_writes
from sdk import jsoncodec
from sdk.errors import InvalidRequestError
from sdk.physical import Check, Delete, Put, TxnOp

__all__ = ["BarrierView", "Storage"]


class Storage(Protocol):
    """What a view needs from the layer below (the barrier or another view)."""

    async def get(self, key: str) -> StoredValue | None: ...

    async def put(self, key: str, value: bytes) -> int: ...

    async def delete(self, key: str) -> None: ...

    async def list(self, prefix: str) -> list[str]: ...

    async def commit(self, ops: Sequence[TxnOp]) -> int: ...

    def read_generation(self) -> int | None:
        """Changes whenever a stored value may have changed (``Barrier.read_generation``)."""
        ...


class BarrierView:
    """A chroot over the barrier: every key is prefixed, ``..`` is refused.

    Engines get a view of ``logical/<uuid>/`` and can never name a key
    outside it, so one mount cannot read another's data.
    """

    def __init__(self, storage: Storage, prefix: str) -> None:
        if prefix and not prefix.endswith("/"):
            raise ValueError("view prefix must end with '/'")
        self._storage = storage
        self.prefix = prefix

    def sub_view(self, prefix: str) -> BarrierView:
        return BarrierView(self._storage, self.prefix + prefix)

    def read_generation(self) -> int | None:
        """The barrier's read generation, for memos of reads (``node.memo.GenerationMemo``)."""
        return self._storage.read_generation()

    def _full(self, key: str) -> str:
        if ".." in key and any(part == ".." for part in key.split("/")):
            raise InvalidRequestError("path may not contain '..' segments")
        return self.prefix + key

    async def get(self, key: str) -> StoredValue | None:
        found = await self._storage.get(self._full(key))
        return StoredValue(key, found.value, found.revision) if found else None

    async def put(self, key: str, value: bytes) -> int:
        full = self._full(key)
        check_writable(full)
        return await self._storage.put(full, value)

    async def delete(self, key: str) -> None:
        full = self._full(key)
        check_writable(full)
        await self._storage.delete(full)

    async def list(self, prefix: str = "") -> list[str]:
        return await self._storage.list(self._full(prefix))

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        prefixed = [_prefixed(op, self._full(op.key)) for op in ops]
        check_writes(prefixed)
        return await self._storage.commit(prefixed)

    async def get_json(self, key: str) -> Any:
        found = await self.get(key)
        return jsoncodec.loads(found.value) if found else None

    async def put_json(self, key: str, value: Any) -> int:
        return await self.put(key, jsoncodec.dumps(value))

    async def list_recursive(self, prefix: str = "") -> builtins.list[str]:
        """Every key below ``prefix`` (used when a mount is removed)."""
        keys: builtins.list[str] = []
        for child in await self.list(prefix):
            if child.endswith("/"):
                keys.extend(await self.list_recursive(prefix + child))
            else:
                keys.append(prefix + child)
        return keys


def _prefixed(op: TxnOp, key: str) -> TxnOp:
    if isinstance(op, Put):
        return Put(key, op.value, op.expect)
    if isinstance(op, Delete):
        return Delete(key, op.expect)
    return Check(key, op.expect)
