"""In-memory physical backend for dev mode and tests."""

from __future__ import annotations

from collections.abc import Sequence

from sdk.errors import RevisionMismatchError
from sdk.physical import Delete, Entry, Put, TxnOp, children_of, validate_key
from sdk.sorted_keys import SortedKeys

__all__ = ["InmemBackend"]


class InmemBackend:
    """A dict of key -> (value, revision), its keys sorted when listed.

    Every method runs to completion without awaiting, so each call is atomic
    on the event loop without a lock.
    """

    def __init__(self) -> None:
        self._data: dict[str, tuple[bytes, int]] = {}
        self._keys = SortedKeys()
        self._revision = 0

    async def get(self, key: str) -> Entry | None:
        validate_key(key)
        found = self._data.get(key)
        return Entry(key, found[0], found[1]) if found else None

    async def put(self, key: str, value: bytes) -> int:
        return self._apply([Put(key, value)])

    async def delete(self, key: str) -> None:
        self._apply([Delete(key)])

    async def list(self, prefix: str) -> list[str]:
        return children_of(prefix, self._keys.starting_with(prefix))

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        return self._apply(ops)

    async def close(self) -> None:
        return None

    def _apply(self, ops: Sequence[TxnOp]) -> int:
        for op in ops:
            validate_key(op.key)
            if op.expect is not None:
                current = self._data.get(op.key)
                actual = current[1] if current else 0
                if actual != op.expect:
                    raise RevisionMismatchError(op.key, op.expect, actual)
        self._revision += 1
        for op in ops:
            if isinstance(op, Put):
                if op.key not in self._data:
                    self._keys.add(op.key)
                self._data[op.key] = (op.value, self._revision)
            elif isinstance(op, Delete) and op.key in self._data:
                del self._data[op.key]
                self._keys.discard(op.key)
        return self._revision
