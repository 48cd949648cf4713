"""A bounded LRU of decrypted values by physical path, in front of the barrier's reads.

A hit skips both the physical read and AES-GCM. Vault keeps the same cache
(``cache_size``, ``disable_cache``). Absent keys are cached too (as ``None``):
they are invalidated by exactly the same writes as present ones.

Exactness is the callers' job, and the whole contract is:

* every change to a key (a local write through the barrier, an entry applied
  by Raft) calls :meth:`ReadCache.invalidate` with its key once the change
  is visible to physical reads, or :meth:`ReadCache.clear` when any key may
  have changed (snapshot install, seal, keyring change);
* a read that missed takes :attr:`ReadCache.epoch` *before* reading storage
  and hands it to :meth:`ReadCache.store`, which drops the value if any
  invalidation happened in between: the read may have seen the old value.

Beside it, the plaintext of this node's own recent writes, with the bytes they
were stored as (:meth:`ReadCache.remember_write`). An invalidation does not
drop them: on a Raft node every write comes back as an applied entry and
invalidates its own keys, and the next read of such a key would decrypt what
this node just encrypted. A read that missed asks :meth:`ReadCache.written`
with the bytes storage holds *now*; only if they are exactly the stored frame
(a random nonce each: no other write produces them) is the plaintext reused,
so a later write by anyone, anywhere, is never hidden. :meth:`ReadCache.clear`
forgets them with everything else.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

from sdk.epoch_lru import MISS, EpochLRU, Miss

__all__ = ["DEFAULT_CACHE_SIZE", "MISS", "WRITTEN_SIZE", "Miss", "ReadCache"]

#: Vault's default ``cache_size`` (entries).
DEFAULT_CACHE_SIZE = 131072
#: Most own writes remembered (fewer if ``cache_size`` is smaller): enough for the
#: writes in flight and just applied, whose keys the next requests read.
WRITTEN_SIZE = 4096

V = TypeVar("V")


class ReadCache(EpochLRU[V]):
    """``key -> value or None`` (known absent), least recently used evicted first;
    the epoch mechanism is :class:`sdk.epoch_lru.EpochLRU`'s."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE, *, enabled: bool = True) -> None:
        super().__init__(size)
        #: key -> (bytes as stored, plaintext) of this node's own recent writes.
        self._written: OrderedDict[str, tuple[bytes, bytes]] = OrderedDict()
        self._enabled = enabled
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self._enabled

    def configure(self, size: int, *, enabled: bool) -> None:
        """Change the bound or switch the cache off; drops everything either way."""
        self.resize(size)
        self._enabled = enabled

    def lookup(self, key: str) -> V | Miss | None:
        # EpochLRU.lookup's body with the counters, not a call to it: every read.
        found = self._entries.get(key, MISS)
        if found is MISS:
            self.misses += 1
            return MISS
        self._entries.move_to_end(key)
        self.hits += 1
        return found

    def store(self, key: str, value: V | None, epoch: int) -> None:
        """Remember ``value`` unless an invalidation happened since ``epoch`` was taken."""
        if self._enabled:
            self.fill(key, value, epoch)

    def clear(self) -> None:
        super().clear()
        self._written.clear()

    def remember_write(self, key: str, stored: bytes, plaintext: bytes) -> None:
        """This node wrote ``plaintext`` to ``key`` as ``stored`` (and storage took it)."""
        if not self._enabled:
            return
        written = self._written
        written[key] = (stored, plaintext)
        written.move_to_end(key)
        if len(written) > min(self._size, WRITTEN_SIZE):
            written.popitem(last=False)

    def forget_write(self, key: str) -> None:
        self._written.pop(key, None)

    def written(self, key: str, stored: bytes) -> bytes | None:
        """The plaintext of this node's write of ``key`` if storage holds exactly its
        bytes (``stored``, read now), else None."""
        found = self._written.get(key)
        if found is None or found[0] != stored:
            return None
        return found[1]
