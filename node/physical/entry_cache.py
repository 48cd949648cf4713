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

import threading
from collections.abc import Iterable

from sdk.epoch_lru import MISS, EpochLRU, Miss
from sdk.physical import Delete, Entry, Put

__all__ = ["DEFAULT_ENTRIES", "MISS", "EntryCache"]

#: Entries kept (ciphertexts of a few hundred bytes: a few MiB).
DEFAULT_ENTRIES = 16384


class EntryCache:
    """``key -> Entry or None`` (known absent), least recently used evicted first;
    safe to use from the event loop, worker threads and the writer thread (a lock
    around :class:`sdk.epoch_lru.EpochLRU`, whose epoch counts the commits applied)."""

    def __init__(self, size: int = DEFAULT_ENTRIES) -> None:
        self._lru: EpochLRU[Entry] = EpochLRU(size)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._lru)

    def lookup(self, key: str) -> Entry | Miss | None:
        with self._lock:
            return self._lru.lookup(key)

    def fill_token(self) -> int:
        """Take before reading storage; give to :meth:`fill` with what was read."""
        return self._lru.epoch

    def fill(self, key: str, entry: Entry | None, token: int) -> None:
        with self._lock:
            self._lru.fill(key, entry, token)

    def update(self, writes: Iterable[tuple[Put | Delete, int]]) -> None:
        """What one batch of commits wrote, each op with its commit's revision."""
        with self._lock:
            lru = self._lru
            lru.advance()
            for op, revision in writes:
                lru.put(op.key, Entry(op.key, op.value, revision) if isinstance(op, Put) else None)

    def clear(self) -> None:
        with self._lock:
            self._lru.clear()
