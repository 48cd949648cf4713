"""Which mounted backend's storage holds a barrier key.

Every key of every applied Raft entry is matched (``node.core.replicated``
through the mount table), nearly all of them under one KV mount (issue 16), so
the lookup is built once per change of the routes and costs a dict lookup per
distinct prefix length rather than a ``startswith`` per mount.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from node.logical.backend import Backend

__all__ = ["StorageOwners"]


class StorageOwners:
    """Storage prefix -> backend for one set of routes.

    When no prefix starts another, at most one matches a key and a lookup per
    prefix length finds it. A prefix that repeats or nests another (possible
    only through a hand-edited table) falls back to the scan in mount order,
    where the first mount that matches owns the key.
    """

    def __init__(self, owners: Iterable[tuple[str, Backend]]) -> None:
        self._in_mount_order = tuple(owners)
        self._by_prefix = dict(self._in_mount_order)
        prefixes = sorted(prefix for prefix, _ in self._in_mount_order)
        # In sorted order a prefix comes right before one it starts.
        nested = any(b.startswith(a) for a, b in pairwise(prefixes))
        self._lengths = None if nested else sorted({len(prefix) for prefix in prefixes})

    def prefixes(self) -> list[str]:
        """Each mount's storage prefix, in mount order."""
        return [prefix for prefix, _ in self._in_mount_order]

    def owner_of(self, key: str) -> tuple[Backend, str] | None:
        """The backend whose storage holds ``key`` and the key relative to it."""
        lengths = self._lengths
        if lengths is not None:
            by_prefix = self._by_prefix
            for length in lengths:
                backend = by_prefix.get(key[:length])
                if backend is not None:
                    return backend, key[length:]
            return None
        for prefix, backend in self._in_mount_order:
            if key.startswith(prefix):
                return backend, key[len(prefix) :]
        return None
