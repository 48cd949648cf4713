"""The hash tree a sync compares: 256 buckets of hash(key, ciphertext) leaves.

Both sides hash the keys a secondary of that kind may hold (the primary its
filtered view, a secondary its own replicated keys), over ciphertext only;
the secondary asks for the buckets whose hashes differ and applies the
difference (puts of missing or changed keys, deletes of keys the primary no
longer has). A root over the buckets is the status ``merkle_root``: equal
roots mean equal data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

__all__ = ["BUCKETS", "bucket_of", "buckets", "differing", "plan", "root"]

BUCKETS = 256


def bucket_of(key: str) -> int:
    return hashlib.sha256(key.encode()).digest()[0] % BUCKETS


def _leaf(key: str, value: bytes) -> bytes:
    encoded = key.encode()
    return hashlib.sha256(len(encoded).to_bytes(4, "big") + encoded + value).digest()


def buckets(entries: Mapping[str, bytes]) -> list[str]:
    """Each bucket's hash (hex) over its keys in sorted order."""
    hashers = [hashlib.sha256() for _ in range(BUCKETS)]
    for key in sorted(entries):
        hashers[bucket_of(key)].update(_leaf(key, entries[key]))
    return [h.hexdigest() for h in hashers]


def root(bucket_hashes: list[str]) -> str:
    return hashlib.sha256("".join(bucket_hashes).encode()).hexdigest()


def differing(mine: list[str], theirs: list[str]) -> list[int]:
    if len(mine) != BUCKETS or len(theirs) != BUCKETS:
        raise ValueError(f"a tree has {BUCKETS} buckets")
    return [i for i in range(BUCKETS) if mine[i] != theirs[i]]


def plan(
    theirs: Mapping[str, bytes], mine: Mapping[str, bytes]
) -> tuple[dict[str, bytes], list[str]]:
    """What makes ``mine`` equal ``theirs`` (one bucket's keys): puts and deletes."""
    puts = {k: v for k, v in theirs.items() if mine.get(k) != v}
    deletes = sorted(k for k in mine if k not in theirs)
    return puts, deletes
