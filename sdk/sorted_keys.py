"""New keys merged into a sorted key list, for stores that list by prefix with
bisection and take writes faster than lists (the Raft state, the ``file``
backend's pending writes)."""

from __future__ import annotations

import bisect
from collections.abc import Collection

__all__ = ["MERGE_ONE_BY_ONE", "merge_sorted"]

#: Up to this many keys are inserted one at a time; more, in one pass over the list.
MERGE_ONE_BY_ONE = 8


def merge_sorted(keys: list[str], added: Collection[str]) -> None:
    """Insert ``added`` (none of them already in ``keys``) into the sorted ``keys``."""
    if len(added) <= MERGE_ONE_BY_ONE:
        for key in added:
            bisect.insort(keys, key)
    else:
        keys.extend(added)
        keys.sort()  # a sorted run and a tail: one merge pass
