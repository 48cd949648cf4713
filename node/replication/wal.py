"""The primary's recent WALs, held in memory so a secondary can resume.

A WAL is one applied Raft entry of the primary: its index (the WAL position)
and, per changed key, the key's ciphertext as read right after the entry was
applied (``None``: deleted). The ring holds every entry after :attr:`start`;
appending never waits for a reader. When it holds more than ``capacity``
entries or ``max_bytes`` of values, the oldest go and ``start`` moves up: a
secondary whose position is now below ``start`` cannot resume and syncs. A
fresh ring (a new active node) starts at the index it began watching from.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

__all__ = ["DEFAULT_CAPACITY", "Wal", "WalRing"]

#: Vault's ``logshipper_buffer_length``.
DEFAULT_CAPACITY = 16384
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Wal:
    index: int
    #: (key, ciphertext or None for a delete)
    ops: tuple[tuple[str, bytes | None], ...]

    @property
    def size(self) -> int:
        return sum(len(k) + (len(v) if v else 0) for k, v in self.ops) + 16


class WalRing:
    def __init__(
        self, start: int, capacity: int = DEFAULT_CAPACITY, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self._wals: deque[Wal] = deque()
        self._bytes = 0
        self.capacity = capacity
        self.max_bytes = max_bytes
        #: Every entry after ``start`` is held (or was never a change).
        self.start = start
        self.last = start
        self._arrived = asyncio.Event()
        #: Readers in ``wait_beyond`` now.
        self._waiting = 0

    def append(self, wal: Wal) -> None:
        if wal.index <= self.last:
            return  # already held (a replay of the feed)
        self._wals.append(wal)
        self._bytes += wal.size
        self.last = wal.index
        while len(self._wals) > self.capacity or (
            self._bytes > self.max_bytes and len(self._wals) > 1
        ):
            dropped = self._wals.popleft()
            self._bytes -= dropped.size
            self.start = dropped.index
        self._arrived.set()
        self._arrived = asyncio.Event()

    def reset(self, index: int) -> None:
        """Everything changed at ``index`` (a snapshot restore): nobody resumes from before."""
        self._wals.clear()
        self._bytes = 0
        self.start = self.last = max(index, self.last)
        self._arrived.set()
        self._arrived = asyncio.Event()

    def skip(self, index: int) -> None:
        """Entries up to ``index`` are held by nobody (this cluster is no primary):
        as :meth:`reset`, but without a new event per entry unless a reader waits,
        since it runs for every write of a cluster that is not a primary."""
        if index <= self.last:
            return
        if self._wals:
            self._wals.clear()
            self._bytes = 0
        self.start = self.last = index
        if self._waiting:
            self._arrived.set()
            self._arrived = asyncio.Event()

    def can_resume(self, position: int) -> bool:
        """Whether every entry after ``position`` is still here."""
        return self.start <= position <= self.last

    def after(self, position: int, limit: int = 512) -> list[Wal]:
        """Up to ``limit`` WALs after ``position`` (the caller checked :meth:`can_resume`)."""
        out: list[Wal] = []
        for wal in self._wals:  # short scans: readers are near the end
            if wal.index > position:
                out.append(wal)
                if len(out) >= limit:
                    break
        return out

    async def wait_beyond(self, position: int, timeout: float) -> bool:
        """Wait until an entry after ``position`` arrives; False on timeout."""
        if self.last > position:
            return True
        self._waiting += 1
        try:
            async with asyncio.timeout(timeout):
                await self._arrived.wait()
        except TimeoutError:
            return False
        finally:
            self._waiting -= 1
        return self.last > position

    def __len__(self) -> int:
        return len(self._wals)
