"""Sorted key sets for stores that list by prefix with bisection and take writes
faster than lists (the Raft state, the ``inmem`` backend, the ``file`` backend's
pending writes).

An ``insort`` per new key moves the whole list: on a store of 100,000 keys that
is ~800 KB of pointers moved for every write of a new key (a KV v2 version key
is one, every write), though listing is rare. :class:`SortedKeys` holds the
keys added and removed since the last listing in two sets and merges them into
the sorted list in one pass when a listing asks.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable

__all__ = ["MERGE_ONE_BY_ONE", "SortedKeys", "merge_sorted"]

#: Up to this many keys are inserted (or removed) one at a time; more, in one pass.
MERGE_ONE_BY_ONE = 8


def merge_sorted(keys: list[str], added: Collection[str]) -> None:
    """Insert ``added`` (none of them already in ``keys``) into the sorted ``keys``."""
    if len(added) <= MERGE_ONE_BY_ONE:
        for key in added:
            bisect.insort(keys, key)
    else:
        keys.extend(added)
        keys.sort()  # a sorted run and a tail: one merge pass


class SortedKeys:
    """The keys of a store, sorted when listed. The store tells it each key that
    became present (:meth:`add`) or absent (:meth:`discard`); it is not a lock:
    a store read from several threads calls it under its own."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        #: Sorted, except for the keys in ``_added`` (present, not here yet) and
        #: ``_removed`` (here, no longer present): see :meth:`sorted`.
        self._keys = sorted(keys)
        self._added: set[str] = set()
        self._removed: set[str] = set()

    def add(self, key: str) -> None:
        """``key`` was absent and is present now."""
        if key in self._removed:
            self._removed.discard(key)  # still in the sorted list
        else:
            self._added.add(key)

    def discard(self, key: str) -> None:
        """``key`` was present and is absent now."""
        if key in self._added:
            self._added.discard(key)  # never reached the sorted list
        else:
            self._removed.add(key)

    def sorted(self) -> list[str]:
        """Every key, sorted: the pending additions and removals merged in. The
        list is this object's own: read it, do not keep it past the next change."""
        keys = self._keys
        if self._removed:
            removed, self._removed = self._removed, set()
            if len(removed) <= MERGE_ONE_BY_ONE:
                for key in removed:
                    keys.pop(bisect.bisect_left(keys, key))
            else:
                keys = self._keys = [key for key in keys if key not in removed]
        if self._added:
            added, self._added = self._added, set()
            merge_sorted(keys, added)
        return keys

    def starting_with(self, prefix: str) -> list[str]:
        """The keys that start with ``prefix``, sorted."""
        keys = self.sorted()
        matched = []
        for key in keys[bisect.bisect_left(keys, prefix) :]:
            if not key.startswith(prefix):
                break
            matched.append(key)
        return matched
