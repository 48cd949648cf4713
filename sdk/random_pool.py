"""Random bytes from the operating system, fetched in blocks and handed out ready-cut.

Request ids, Raft command ids and AES-GCM nonces are taken on every request;
one ``os.urandom`` call per id was a measurable share of a KV read (a system
call each, docs/performance.md). A block of 4 KiB is cut into pieces of the
size asked for, and text ids are formatted a block at a time, so taking one is
a ``list.pop``: atomic, so no two threads are handed the same piece, with no
lock of ours (the lock and the per-id formatting were ~1 µs of every request).
The bytes are the same kernel randomness, only fetched ahead; a forked child
starts with empty pools.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

__all__ = ["random_bytes", "random_hex", "random_uuid4", "random_uuid4_hex"]

_BLOCK = 4096
#: Larger requests (rare: none on a request's path) are served by ``os.urandom`` alone.
_POOLED_UP_TO = 64

_T = TypeVar("_T")


class _Pool:
    """Ready pieces per size, and ready UUID texts."""

    def __init__(self) -> None:
        self._pieces: dict[int, list[bytes]] = {}
        self._uuids: list[str] = []
        self._uuid_hexes: list[str] = []

    def take(self, count: int) -> bytes:
        if count > _POOLED_UP_TO or count <= 0:
            return os.urandom(count)
        pieces = self._pieces.get(count)
        if pieces is None:
            pieces = self._pieces.setdefault(count, [])
        return _next(pieces, _cut, count)

    def uuid4(self) -> str:
        return _next(self._uuids, _uuid4_texts)

    def uuid4_hex(self) -> str:
        return _next(self._uuid_hexes, _uuid4_hexes)

    def forget(self) -> None:
        self._pieces = {}
        self._uuids = []
        self._uuid_hexes = []


def _next(ready: list[_T], refill: Callable[..., list[_T]], *args: int) -> _T:
    """The next ready piece, refilling the list when it is empty (two threads may
    both refill: harmless, every piece is fresh bytes)."""
    while True:
        try:
            return ready.pop()
        except IndexError:
            ready.extend(refill(*args))


def _cut(count: int) -> list[bytes]:
    """A block of fresh bytes cut into pieces of ``count``."""
    block = os.urandom(_BLOCK - _BLOCK % count)
    return [block[i : i + count] for i in range(0, len(block), count)]


def _uuid4_block() -> str:
    """A block's worth of random (version 4, RFC 4122 variant) UUIDs, as hex digits
    end to end (32 each)."""
    raw = bytearray(os.urandom(_BLOCK))
    raw[6::16] = bytes((b & 0x0F) | 0x40 for b in raw[6::16])  # version 4
    raw[8::16] = bytes((b & 0x3F) | 0x80 for b in raw[8::16])  # RFC 4122 variant
    return raw.hex()


def _uuid4_hexes() -> list[str]:
    text = _uuid4_block()
    return [text[i : i + 32] for i in range(0, len(text), 32)]


def _uuid4_texts() -> list[str]:
    """As ``str(uuid.uuid4())`` gives them: 8-4-4-4-12 digits."""
    return [f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" for h in _uuid4_hexes()]


_pool = _Pool()
# A forked child must not hand out the pieces its parent hands out too.
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
    return _pool.uuid4_hex()


def random_uuid4() -> str:
    """A random (version 4) UUID as text, as ``str(uuid.uuid4())`` gives, at a fraction
    of the cost: no ``UUID`` object in between, and formatted a block at a time."""
    return _pool.uuid4()
