"""The ``file`` backend's logged writes that its key files do not hold yet.

A commit is durable once its record is in the write-ahead log; writing each
key's file at once cost three file operations per KV v2 write (the metadata,
the new version, the pruned version) and was most of a busy store's time
(docs/performance.md, "Twelfth pass"). The key files are now brought up to
date only at a checkpoint, from each key's last write since the previous one:
a version created and pruned between two checkpoints never reaches a file,
and a key written a hundred times is written once.

Until then the writes live here, in two generations:

* ``current``: everything logged since the last rotation (writer thread only
  adds to it);
* ``flushing``: the generation a checkpoint is writing to the key files; it is
  dropped only after they are durable, so a key in neither generation has a
  file that is up to date.

Reads consult ``current`` first, then ``flushing``, then the file.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from sdk.epoch_lru import MISS, Miss
from sdk.physical import Delete, Entry, Put
from sdk.sorted_keys import SortedKeys

__all__ = ["LoggedWrite", "PendingWrites"]

#: A key's last logged write and the revision of the commit that made it.
LoggedWrite = tuple[Put | Delete, int]


class _Generation:
    """One generation's writes by key, and its keys in order for lists (keys new
    since the last list are merged in by the next one): a list looks up its prefix
    instead of scanning every pending key, which made ``file`` storage's token
    create and revoke (a revoke lists) twice as slow."""

    __slots__ = ("keys", "writes")

    def __init__(self) -> None:
        self.writes: dict[str, LoggedWrite] = {}
        self.keys = SortedKeys()

    def add(self, write: LoggedWrite) -> None:
        key = write[0].key
        if key not in self.writes:
            self.keys.add(key)
        self.writes[key] = write

    def below(self, prefix: str) -> Iterable[tuple[str, LoggedWrite]]:
        for key in self.keys.starting_with(prefix):
            yield key, self.writes[key]


class PendingWrites:
    """``key -> LoggedWrite`` not yet in the key files; safe across threads."""

    def __init__(self) -> None:
        self._current = _Generation()
        self._flushing = _Generation()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._current.writes) + len(self._flushing.writes)

    def record(self, writes: Iterable[LoggedWrite]) -> None:
        """A logged batch's writes (each key's last one)."""
        with self._lock:
            add = self._current.add
            for write in writes:
                add(write)

    def lookup(self, key: str) -> Entry | Miss | None:
        """The key's pending state: an entry, ``None`` (deleted), or ``MISS``
        (its file is up to date)."""
        with self._lock:
            found = self._current.writes.get(key) or self._flushing.writes.get(key)
        if found is None:
            return MISS
        op, revision = found
        return Entry(op.key, op.value, revision) if isinstance(op, Put) else None

    def rotate(self) -> dict[str, LoggedWrite]:
        """Start a checkpoint: ``current`` becomes ``flushing`` (its writes returned;
        the previous flushing generation must have been :meth:`flushed`)."""
        with self._lock:
            if self._flushing.writes:
                raise RuntimeError("a checkpoint is still writing the previous generation")
            self._flushing, self._current = self._current, _Generation()
            return self._flushing.writes

    def flushed(self) -> None:
        """The flushing generation is durable in the key files."""
        with self._lock:
            self._flushing = _Generation()

    def overlay(self, prefix: str) -> dict[str, LoggedWrite]:
        """Every pending write below ``prefix``, the newest generation winning."""
        with self._lock:
            found = dict(self._flushing.below(prefix))
            found.update(self._current.below(prefix))
        return found
