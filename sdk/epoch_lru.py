"""A bounded LRU whose fills are refused once anything changed since they began.

Both caches of stored values need the same mechanism: the barrier's read cache
of plaintexts (``node/barrier/cache.py``) and the ``file`` backend's cache of
entries (``node/physical/entry_cache.py``). A read that missed goes to storage,
which can take a while (a file read on a worker thread, a Raft read); a write
applied meanwhile may have replaced what it read. So the reader takes the
:attr:`EpochLRU.epoch` *before* reading and hands it to :meth:`EpochLRU.fill`,
which keeps the value only if no change (:meth:`EpochLRU.advance`,
:meth:`EpochLRU.invalidate`, :meth:`EpochLRU.clear`) happened in between.

Absent keys are cached as ``None``; :data:`MISS` means "not known". Not
thread-safe: a caller shared by threads holds its own lock around it.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["MISS", "EpochLRU", "Miss"]

V = TypeVar("V")


class Miss(enum.Enum):
    """What :meth:`EpochLRU.lookup` returns when it knows nothing about a key."""

    MISS = enum.auto()


MISS = Miss.MISS


class EpochLRU(Generic[V]):
    """``key -> value or None`` (known absent), least recently used evicted first."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("cache size must be at least 1")
        self._entries: OrderedDict[str, V | None] = OrderedDict()
        self._size = size
        #: Bumped by every change; a fill that saw another value is refused.
        self.epoch = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        return self._size

    def resize(self, size: int) -> None:
        """Change the bound; drops everything."""
        if size < 1:
            raise ValueError("cache size must be at least 1")
        self._size = size
        self.clear()

    def lookup(self, key: str) -> V | Miss | None:
        found = self._entries.get(key, MISS)
        if found is not MISS:
            self._entries.move_to_end(key)
        return found

    def fill(self, key: str, value: V | None, epoch: int) -> None:
        """Remember what a read that began at ``epoch`` found, unless anything changed since."""
        if epoch == self.epoch:
            self.put(key, value)

    def put(self, key: str, value: V | None) -> None:
        """Remember ``value`` as the current one (the caller knows it is)."""
        entries = self._entries
        entries[key] = value
        entries.move_to_end(key)
        if len(entries) > self._size:
            entries.popitem(last=False)

    def advance(self) -> None:
        """Something changed: refuse the fills begun before now."""
        self.epoch += 1

    def invalidate(self, keys: Iterable[str]) -> None:
        """``keys`` changed: forget them and refuse the fills begun before now."""
        self.epoch += 1
        entries = self._entries
        for key in keys:
            entries.pop(key, None)

    def clear(self) -> None:
        self.epoch += 1
        self._entries.clear()
