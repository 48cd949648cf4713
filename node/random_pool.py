"""Random bytes from the operating system, fetched in blocks.

Request ids and Raft command ids are taken on every request; one ``os.urandom``
call per id was a measurable share of a KV read (a system call each,
docs/performance.md). Taking 4 KiB at a time makes it one call per 256 ids.
The bytes are the same kernel randomness, only fetched ahead; the pool is
per process and never shared across a fork.
"""

from __future__ import annotations

import os

__all__ = ["random_bytes", "random_hex"]

_BLOCK = 4096


class _Pool:
    def __init__(self) -> None:
        self._buffer = b""
        self._at = 0
        self._pid = os.getpid()

    def take(self, count: int) -> bytes:
        if self._at + count > len(self._buffer) or self._pid != os.getpid():
            self._buffer, self._at, self._pid = os.urandom(max(_BLOCK, count)), 0, os.getpid()
        start = self._at
        self._at = start + count
        return self._buffer[start : self._at]


_pool = _Pool()


def random_bytes(count: int) -> bytes:
    """``count`` bytes of kernel randomness (not for key material: use ``os.urandom``)."""
    return _pool.take(count)


def random_hex(count: int) -> str:
    """``count`` random bytes as lower-case hex, as ``uuid.uuid4().hex`` is for 16."""
    return _pool.take(count).hex()
