"""Random bytes from the operating system, fetched in blocks.

Request ids and Raft command ids are taken on every request; one ``os.urandom``
call per id was a measurable share of a KV read (a system call each,
docs/performance.md). Taking 4 KiB at a time makes it one call per 256 ids.
The bytes are the same kernel randomness, only fetched ahead; a forked child
starts with an empty pool.
"""

from __future__ import annotations

import os
import threading

__all__ = ["random_bytes", "random_hex", "random_uuid4", "random_uuid4_hex"]

_BLOCK = 4096


class _Pool:
    """One lock around the cursor: two threads must never be handed the same bytes
    (a repeated Raft command id would make a write look like a retry)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffer = b""
        self._at = 0

    def take(self, count: int) -> bytes:
        with self._lock:
            if self._at + count > len(self._buffer):
                self._buffer, self._at = os.urandom(max(_BLOCK, count)), 0
            start = self._at
            self._at = start + count
            return self._buffer[start : self._at]

    def forget(self) -> None:
        self._lock = threading.Lock()  # the parent's may have been held at the fork
        self._buffer, self._at = b"", 0


_pool = _Pool()
# A forked child must not hand out the bytes its parent hands out too.
os.register_at_fork(after_in_child=_pool.forget)


def random_bytes(count: int) -> bytes:
    """``count`` bytes of kernel randomness (not for key material: use ``os.urandom``;
    nonces and ids, which must be unique rather than secret, are fine)."""
    return _pool.take(count)


def random_hex(count: int) -> str:
    """``count`` random bytes as lower-case hex, as ``uuid.uuid4().hex`` is for 16."""
    return _pool.take(count).hex()


def random_uuid4_hex() -> str:
    """A random (version 4) UUID as 32 hex digits, as ``uuid.uuid4().hex`` gives, from
    pooled bytes: ``uuid4`` calls ``os.urandom``, a system call that releases the GIL."""
    raw = bytearray(_pool.take(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()


def random_uuid4() -> str:
    """A random (version 4) UUID as text, as ``str(uuid.uuid4())`` gives, at a fraction
    of the cost: no ``UUID`` object in between, and pooled random bytes."""
    h = random_uuid4_hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
