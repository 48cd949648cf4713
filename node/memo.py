"""Memos of what reads found, shared between callers (who treat values as read-only).

- ``DecodeMemo``: decoded records by storage key, reused only while the stored
  bytes are the same. A hit requires the plaintext just read to equal (``==``)
  the bytes that were decoded, so the memo is right whatever sits below it (a
  barrier cache, writes applied from Raft on a standby, another process): any
  change to a record changes its bytes. It saves only the decoding, never the read.
- ``GenerationMemo``: what a read returned, reused only while the barrier's read
  generation (``Barrier.read_generation``) is the one taken before that read: no
  stored value has changed since, so reading again would find the same. It saves
  the read too (on a KV read, the view, seal-wrap and barrier layers and the
  cache lookup, twice). Any write anywhere moves the generation, so it pays
  where reads outnumber writes, and costs a failed lookup elsewhere.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from sdk.epoch_lru import MISS, Miss

__all__ = ["DecodeMemo", "GenerationMemo"]

T = TypeVar("T")
K = TypeVar("K")


class DecodeMemo(Generic[T]):
    """A bounded LRU of ``key -> (bytes, decoded)``."""

    def __init__(self, decode: Callable[[bytes], T], capacity: int = 2048) -> None:
        self._decode = decode
        self._capacity = capacity
        self._entries: OrderedDict[str, tuple[bytes, T]] = OrderedDict()

    def decode(self, key: str, raw: bytes) -> T:
        """``decode(raw)``, from the memo when ``key`` was last decoded from these bytes."""
        hit = self._entries.get(key)
        if hit is not None and hit[0] == raw:
            self._entries.move_to_end(key)
            return hit[1]
        value = self._decode(raw)
        self.remember(key, raw, value)
        return value

    def remember(self, key: str, raw: bytes, value: T) -> None:
        """Record that ``raw`` decodes to ``value`` (e.g. right after writing it)."""
        self._entries[key] = (raw, value)
        self._entries.move_to_end(key)
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class GenerationMemo(Generic[K, T]):
    """A bounded ``key -> (read generation, value)``, oldest dropped first.

    ``generation`` is ``None`` when the barrier keeps no read cache (no generation
    to trust): then nothing is kept and nothing is found.
    """

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._entries: dict[K, tuple[int, T]] = {}

    def get(self, key: K, generation: int | None) -> T | Miss:
        """The value read at ``generation``; :data:`MISS` if there is none."""
        hit = self._entries.get(key)
        if hit is None or hit[0] != generation:
            return MISS
        return hit[1]

    def keep(self, key: K, generation: int | None, value: T) -> None:
        """Remember what a read that began at ``generation`` returned."""
        if generation is None:
            return
        entries = self._entries
        entries.pop(key, None)
        if len(entries) >= self._capacity:
            del entries[next(iter(entries))]
        entries[key] = (generation, value)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
