"""The ``file`` backend's write-through cache of stored entries.

Vault keeps an LRU of physical entries in front of its storage (``cache_size``).
The barrier's read cache (``node/barrier/cache.py``) holds plaintexts but, by
its contract, sends the first read after each write to storage to check the
stored frame, and on ``file`` every storage read is a file read on a worker
thread: with the writer thread's revision checks, file reads were a third of
the writer's samples and most of the worker threads' (docs/performance.md,
"Seventh pass"). The backend runs in one process (it holds a lock on the
directory), so it sees every write and can keep this cache exact:

* the writer thread :meth:`EntryCache.update` s every key a commit wrote, after
  the files are in place and before the commit is answered;
* a read that missed takes :meth:`EntryCache.fill_token` before it reads the
  file and hands it to :meth:`EntryCache.fill`, which drops the entry if any
  commit was applied in between (the file read may predate it);
* after a failed write, :meth:`EntryCache.clear`: the files' state is unknown.
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict
from collections.abc import Iterable

from sdk.physical import Delete, Entry, Put

__all__ = ["DEFAULT_ENTRIES", "MISS", "EntryCache"]

#: Entries kept (ciphertexts of a few hundred bytes: a few MiB).
DEFAULT_ENTRIES = 16384


class _Miss(enum.Enum):
    MISS = enum.auto()


#: What :meth:`EntryCache.lookup` returns when it knows nothing about a key.
MISS = _Miss.MISS


class EntryCache:
    """``key -> Entry or None`` (known absent), least recently used evicted first;
    safe to use from the event loop, worker threads and the writer thread."""

    def __init__(self, size: int = DEFAULT_ENTRIES) -> None:
        if size < 1:
            raise ValueError("cache size must be at least 1")
        self._size = size
        self._entries: OrderedDict[str, Entry | None] = OrderedDict()
        self._lock = threading.Lock()
        #: Commits applied so far; a fill that saw an older count may be stale.
        self._applied = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: str) -> Entry | _Miss | None:
        with self._lock:
            try:
                found = self._entries[key]
            except KeyError:
                return MISS
            self._entries.move_to_end(key)
            return found

    def fill_token(self) -> int:
        """Take before reading storage; give to :meth:`fill` with what was read."""
        return self._applied

    def fill(self, key: str, entry: Entry | None, token: int) -> None:
        with self._lock:
            if token == self._applied:
                self._store(key, entry)

    def update(self, writes: Iterable[tuple[Put | Delete, int]]) -> None:
        """What one batch of commits wrote, each op with its commit's revision."""
        with self._lock:
            self._applied += 1
            for op, revision in writes:
                stored = Entry(op.key, op.value, revision) if isinstance(op, Put) else None
                self._store(op.key, stored)

    def clear(self) -> None:
        with self._lock:
            self._applied += 1
            self._entries.clear()

    def _store(self, key: str, entry: Entry | None) -> None:
        entries = self._entries
        entries[key] = entry
        entries.move_to_end(key)
        if len(entries) > self._size:
            entries.popitem(last=False)
