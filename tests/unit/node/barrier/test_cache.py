"""The barrier's read cache of decrypted values: hits, exact invalidation, races, bounds.

"Another node" is a second ``Barrier`` unsealed with the same root key over the
same storage: its writes change what storage holds without passing through
the first barrier, which is what an entry applied by Raft looks like.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

import pytest

from node.barrier import aead
from node.barrier.barrier import KEYRING_PATH, Barrier
from node.barrier.cache import MISS, ReadCache
from node.barrier.view import BarrierView
from node.physical.inmem import InmemBackend
from sdk.errors import RevisionMismatchError, SealedError, StorageError
from sdk.physical import Check, Delete, Entry, Put, TxnOp


class CountingBackend(InmemBackend):
    """In-memory storage that counts reads and can hold reads (not the keyring's) open."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.gate: asyncio.Event | None = None
        self.reading = asyncio.Event()

    async def get(self, key: str) -> Entry | None:
        self.reads += 1
        found = await super().get(key)  # what storage held when the read began
        if self.gate is not None and key != KEYRING_PATH:
            self.reading.set()
            await self.gate.wait()
        return found


class LandsThenFails(CountingBackend):
    """With ``fail`` set, writes apply and then report failure (a Raft write that timed out)."""

    fail = False

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        revision = await super().commit(ops)
        if self.fail:
            raise StorageError("raft write not confirmed; it may still be applied")
        return revision

    async def put(self, key: str, value: bytes) -> int:
        return await self.commit([Put(key, value)])


@pytest.fixture
def root_key() -> bytes:
    return os.urandom(32)


@pytest.fixture
def physical() -> CountingBackend:
    return CountingBackend()


@pytest.fixture
async def barrier(physical: CountingBackend, root_key: bytes) -> Barrier:
    barrier = Barrier(physical)
    await barrier.initialize(root_key)
    return barrier


@pytest.fixture
async def other(physical: CountingBackend, root_key: bytes, barrier: Barrier) -> Barrier:
    """Another node's barrier over the same storage."""
    other = Barrier(physical, disable_cache=True)
    await other.unseal(root_key)
    return other


async def value(barrier: Barrier | BarrierView, key: str) -> bytes | None:
    found = await barrier.get(key)
    return found.value if found else None


# -- hits --------------------------------------------------------------------------


async def test_a_hit_skips_storage_and_decryption(
    barrier: Barrier, physical: CountingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = await barrier.put("a", b"one")
    first = await barrier.get("a")
    reads = physical.reads

    def no_decryption(*args: Any) -> bytes:
        raise AssertionError("a cache hit decrypted")

    monkeypatch.setattr("node.barrier.barrier.open_with", no_decryption)
    again = await barrier.get("a")

    assert physical.reads == reads
    assert again == first and again is not None
    assert (again.key, again.value, again.revision) == ("a", b"one", revision)
    assert barrier.cache.hits == 1


async def test_absent_keys_are_cached_until_written(
    barrier: Barrier, physical: CountingBackend
) -> None:
    assert await barrier.get("missing") is None
    reads = physical.reads
    assert await barrier.get("missing") is None
    assert physical.reads == reads

    await barrier.put("missing", b"now here")
    assert await value(barrier, "missing") == b"now here"


async def test_views_share_the_cache_by_physical_path(
    barrier: Barrier, physical: CountingBackend
) -> None:
    view = BarrierView(barrier, "logical/abc/")
    await view.put("k", b"v")
    found = await view.get("k")
    assert found is not None and found.key == "k"
    reads = physical.reads
    via_barrier = await barrier.get("logical/abc/k")
    assert physical.reads == reads
    assert via_barrier is not None and via_barrier.value == b"v"


# -- local writes ------------------------------------------------------------------


async def test_put_delete_and_commit_invalidate_what_they_change(barrier: Barrier) -> None:
    for key in ("p", "d", "c1", "c2", "kept"):
        await barrier.put(key, b"old")
        assert await value(barrier, key) == b"old"

    revision = await barrier.put("p", b"new")
    await barrier.delete("d")
    kept = await barrier.get("kept")
    assert kept is not None
    committed = await barrier.commit(
        [Put("c1", b"new"), Delete("c2"), Check("kept", kept.revision)]
    )

    found = await barrier.get("p")
    assert found is not None and (found.value, found.revision) == (b"new", revision)
    assert await barrier.get("d") is None
    found = await barrier.get("c1")
    assert found is not None and (found.value, found.revision) == (b"new", committed)
    assert await barrier.get("c2") is None
    assert await value(barrier, "kept") == b"old"


async def test_revisions_from_the_cache_still_drive_conditional_writes(barrier: Barrier) -> None:
    await barrier.put("cas", b"v1")
    first = await barrier.get("cas")
    assert first is not None
    await barrier.commit([Put("cas", b"v2", first.revision)])
    second = await barrier.get("cas")  # the cached v1 must be gone, revision and all
    assert second is not None and second.value == b"v2"
    with pytest.raises(RevisionMismatchError):
        await barrier.commit([Put("cas", b"lost", first.revision)])
    await barrier.commit([Put("cas", b"v3", second.revision)])
    assert await value(barrier, "cas") == b"v3"


async def test_a_mismatched_conditional_write_leaves_the_right_value(barrier: Barrier) -> None:
    await barrier.put("k", b"v1")
    assert await value(barrier, "k") == b"v1"
    with pytest.raises(RevisionMismatchError):
        await barrier.commit([Put("k", b"never", expect=0)])
    found = await barrier.get("k")
    assert found is not None and found.value == b"v1"


async def test_a_write_that_landed_but_failed_is_not_hidden(root_key: bytes) -> None:
    physical = LandsThenFails()
    barrier = Barrier(physical)
    await barrier.initialize(root_key)
    assert await barrier.get("k") is None  # cached as absent

    physical.fail = True
    with pytest.raises(StorageError):
        await barrier.put("k", b"landed")
    assert await value(barrier, "k") == b"landed"
    with pytest.raises(StorageError):
        await barrier.commit([Put("k", b"landed again")])
    assert await value(barrier, "k") == b"landed again"


# -- changes made elsewhere (Raft) ---------------------------------------------------


async def test_changes_applied_elsewhere_show_once_invalidated(
    barrier: Barrier, other: Barrier
) -> None:
    await barrier.put("shared", b"v1")
    assert await value(barrier, "shared") == b"v1"
    await other.put("shared", b"v2")

    assert await value(barrier, "shared") == b"v1"  # stale until told: why Raft must tell us
    barrier.invalidate(["shared"])
    assert await value(barrier, "shared") == b"v2"

    await other.delete("shared")
    barrier.invalidate(["shared"])
    assert await barrier.get("shared") is None


async def test_a_reset_drops_everything(barrier: Barrier, other: Barrier) -> None:
    for key in ("x", "y"):
        await barrier.put(key, b"old")
        await barrier.get(key)
    await other.put("x", b"new")
    await other.delete("y")
    barrier.invalidate_all()
    assert len(barrier.cache) == 0
    assert await value(barrier, "x") == b"new"
    assert await barrier.get("y") is None


async def test_a_read_that_raced_an_invalidation_is_not_cached(
    barrier: Barrier, other: Barrier, physical: CountingBackend
) -> None:
    await barrier.put("race", b"old")
    physical.gate = asyncio.Event()
    slow = asyncio.create_task(barrier.get("race"))
    await physical.reading.wait()  # the read holds the old value
    await other.put("race", b"new")  # applied elsewhere ...
    barrier.invalidate(["race"])  # ... and reported while the read is in flight
    physical.gate.set()
    stale = await slow
    assert stale is not None and stale.value == b"old"  # it began before the change
    physical.gate = None
    assert await value(barrier, "race") == b"new"  # ... so it was not cached


async def test_a_read_that_raced_a_local_write_is_not_cached(
    barrier: Barrier, physical: CountingBackend
) -> None:
    await barrier.put("race", b"old")
    physical.gate = asyncio.Event()
    slow = asyncio.create_task(barrier.get("race"))
    await physical.reading.wait()
    await barrier.put("race", b"new")
    physical.gate.set()
    stale = await slow
    assert stale is not None and stale.value == b"old"
    physical.gate = None
    assert await value(barrier, "race") == b"new"


# -- this node's own writes, invalidated when Raft applies them ------------------------


def _no_decryption(*args: Any) -> bytes:
    raise AssertionError("decrypted a value this node wrote")


async def test_an_own_write_is_read_back_without_decrypting(
    barrier: Barrier, physical: CountingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await barrier.commit([Put("mine", b"v1"), Put("also", b"v2")])
    revision = await barrier.put("single", b"v3")
    barrier.invalidate(["mine", "also", "single"])  # Raft applied our own entries
    monkeypatch.setattr("node.barrier.barrier.open_with", _no_decryption)
    reads = physical.reads
    assert await value(barrier, "mine") == b"v1"
    assert await value(barrier, "also") == b"v2"
    found = await barrier.get("single")
    assert found is not None and (found.value, found.revision) == (b"v3", revision)
    assert physical.reads == reads + 3  # storage is still asked what it holds now


async def test_a_later_write_elsewhere_is_never_hidden_by_an_own_write(
    barrier: Barrier, other: Barrier
) -> None:
    await barrier.put("k", b"mine")
    await other.put("k", b"theirs")
    barrier.invalidate(["k"])
    assert await value(barrier, "k") == b"theirs"
    await other.put("k", b"mine")  # the same plaintext, but other bytes in storage
    barrier.invalidate(["k"])
    assert await value(barrier, "k") == b"mine"
    await other.delete("k")
    barrier.invalidate(["k"])
    assert await barrier.get("k") is None


async def test_own_writes_are_forgotten_on_delete_seal_reset_and_rotation(
    barrier: Barrier, root_key: bytes
) -> None:
    await barrier.put("d", b"v")
    await barrier.commit([Put("t", b"v"), Delete("d")])
    assert list(barrier.cache._written) == ["t"]
    barrier.seal()
    assert barrier.cache._written == {}
    await barrier.unseal(root_key)
    await barrier.put("k", b"v")
    barrier.invalidate_all()
    assert barrier.cache._written == {}
    await barrier.put("k", b"v")
    await barrier.rotate()
    assert barrier.cache._written == {}


async def test_a_write_in_flight_at_seal_is_not_remembered(root_key: bytes) -> None:
    class Held(InmemBackend):
        hold: asyncio.Event | None = None
        committing = asyncio.Event()

        async def commit(self, ops: Sequence[TxnOp]) -> int:
            if self.hold is not None:
                self.committing.set()
                await self.hold.wait()
            return await super().commit(ops)

    physical = Held()
    barrier = Barrier(physical)
    await barrier.initialize(root_key)
    physical.hold = asyncio.Event()
    write = asyncio.create_task(barrier.commit([Put("k", b"plaintext")]))
    await physical.committing.wait()
    barrier.seal()
    await barrier.unseal(root_key)
    physical.hold.set()
    await write
    assert barrier.cache._written == {}


async def test_own_writes_are_bounded_and_off_with_the_cache(root_key: bytes) -> None:
    small = Barrier(InmemBackend(), cache_size=2)
    off = Barrier(InmemBackend(), disable_cache=True)
    for barrier in (small, off):
        await barrier.initialize(root_key)
        for n in range(5):
            await barrier.put(f"k{n}", b"v")
    assert list(small.cache._written) == ["k3", "k4"]
    assert off.cache._written == {}


# -- seal, unseal, keyring -----------------------------------------------------------


async def test_seal_forgets_every_plaintext(barrier: Barrier, root_key: bytes) -> None:
    await barrier.put("secret", b"plaintext")
    await barrier.get("secret")
    await barrier.get("absent")
    assert len(barrier.cache) == 2

    barrier.seal()
    assert len(barrier.cache) == 0
    with pytest.raises(SealedError):
        await barrier.get("secret")
    with pytest.raises(SealedError):
        await barrier.get("absent")

    await barrier.unseal(root_key)
    assert await value(barrier, "secret") == b"plaintext"


async def test_a_read_in_flight_at_seal_is_neither_returned_nor_cached(
    barrier: Barrier, physical: CountingBackend, root_key: bytes
) -> None:
    await barrier.put("k", b"v")
    physical.gate = asyncio.Event()
    slow = asyncio.create_task(barrier.get("k"))
    await physical.reading.wait()
    barrier.seal()
    await barrier.unseal(root_key)
    physical.gate.set()
    found = await slow
    assert found is not None and found.value == b"v"
    assert len(barrier.cache) == 0  # the unseal in between refused the fill


async def test_rotation_and_keyring_reload_clear_the_cache(
    barrier: Barrier, other: Barrier
) -> None:
    await barrier.put("k", b"v1")
    await barrier.get("k")
    await barrier.rotate()
    assert len(barrier.cache) == 0
    assert await value(barrier, "k") == b"v1"  # older terms still decrypt

    await other.reload_keyring()
    await other.rotate()
    await other.put("k", b"v2")  # under a term this barrier has not loaded yet
    await barrier.reload_keyring()
    assert len(barrier.cache) == 0
    assert await value(barrier, "k") == b"v2"


# -- settings ------------------------------------------------------------------------


async def test_disable_cache_reads_storage_every_time(
    physical: CountingBackend, root_key: bytes
) -> None:
    barrier = Barrier(physical, disable_cache=True)
    await barrier.initialize(root_key)
    await barrier.put("k", b"v")
    reads = physical.reads
    for _ in range(3):
        assert await value(barrier, "k") == b"v"
    assert physical.reads == reads + 3
    assert len(barrier.cache) == 0


async def test_size_bounds_entries_and_evicts_the_least_recently_used(
    physical: CountingBackend, root_key: bytes
) -> None:
    barrier = Barrier(physical, cache_size=2)
    await barrier.initialize(root_key)
    for key in ("a", "b", "c"):
        await barrier.put(key, key.encode())
    await barrier.get("a")
    await barrier.get("b")
    await barrier.get("a")  # b is now the least recently used
    await barrier.get("c")
    assert len(barrier.cache) == 2
    assert barrier.cache.lookup("b") is MISS
    reads = physical.reads
    assert await value(barrier, "a") == b"a"
    assert await value(barrier, "c") == b"c"
    assert physical.reads == reads


def test_cache_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ReadCache(0)
    cache: ReadCache[bytes] = ReadCache(4)
    cache.store("k", b"v", cache.epoch)
    cache.configure(1, enabled=False)
    assert len(cache) == 0 and not cache.enabled
    cache.store("k", b"v", cache.epoch)
    assert len(cache) == 0


# -- AES-GCM objects -----------------------------------------------------------------


async def test_the_barrier_builds_no_cipher_per_operation(
    physical: CountingBackend, root_key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    barrier = Barrier(physical, disable_cache=True)
    await barrier.initialize(root_key)

    def no_new_cipher(key: bytes) -> Any:
        raise AssertionError("a new AESGCM per operation")

    monkeypatch.setattr(aead, "AESGCM", no_new_cipher)
    await barrier.put("k", b"v")
    await barrier.commit([Put("j", b"w")])
    assert await value(barrier, "k") == b"v"
    assert await value(barrier, "j") == b"w"
