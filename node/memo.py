"""Decoded records by storage key, reused only while the stored bytes are the same.

A hit requires the plaintext just read to equal (``==``) the bytes that were
decoded, so the memo is right whatever sits below it (a barrier cache, writes
applied from Raft on a standby, another process): any change to a record
changes its bytes. It saves only the decoding, never the read.
Values are shared between callers, who must treat them as read-only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["DecodeMemo"]

T = TypeVar("T")


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
