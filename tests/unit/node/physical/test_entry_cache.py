"""The ``file`` backend's write-through entry cache: exact, bounded, and what lets a
read after a write (and the writer's revision checks) skip the key files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.physical.entry_cache import MISS, EntryCache
from node.physical.file import FileBackend
from sdk.errors import RevisionMismatchError
from sdk.physical import Delete, Entry, Put


def test_lookup_knows_entries_absent_keys_and_misses() -> None:
    cache = EntryCache()
    cache.update([(Put("a", b"1"), 7), (Delete("b"), 7)])
    assert cache.lookup("a") == Entry("a", b"1", 7)
    assert cache.lookup("b") is None
    assert cache.lookup("c") is MISS


def test_a_fill_that_raced_a_commit_is_dropped() -> None:
    cache = EntryCache()
    token = cache.fill_token()
    cache.update([(Put("other", b"x"), 3)])  # a commit lands while the file is read
    cache.fill("a", Entry("a", b"old", 1), token)
    assert cache.lookup("a") is MISS
    cache.fill("a", Entry("a", b"old", 1), cache.fill_token())
    assert cache.lookup("a") == Entry("a", b"old", 1)


def test_clear_forgets_everything_and_refuses_fills_begun_before() -> None:
    cache = EntryCache()
    token = cache.fill_token()
    cache.update([(Put("a", b"1"), 1)])
    cache.clear()
    cache.fill("b", None, token)
    assert cache.lookup("a") is MISS and cache.lookup("b") is MISS


def test_the_least_recently_used_entry_leaves_first() -> None:
    cache = EntryCache(size=2)
    cache.update([(Put("a", b"1"), 1), (Put("b", b"2"), 2)])
    assert cache.lookup("a") is not MISS  # "a" is now the most recent
    cache.update([(Put("c", b"3"), 3)])
    assert cache.lookup("b") is MISS
    assert len(cache) == 2


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[FileBackend]:
    store = FileBackend(tmp_path / "store")
    try:
        yield store
    finally:
        await store.close()


async def test_a_read_after_a_write_opens_no_file(backend: FileBackend) -> None:
    revision = await backend.commit([Put("k/a", b"v1"), Delete("k/gone")])
    with mock.patch.object(FileBackend, "_get", side_effect=AssertionError("file read")):
        assert await backend.get("k/a") == Entry("k/a", b"v1", revision)
        assert await backend.get("k/gone") is None
        # The writer's revision check for an expected revision reads no file either.
        await backend.commit([Put("k/a", b"v2", expect=revision)])
        with pytest.raises(RevisionMismatchError):
            await backend.commit([Put("k/a", b"v3", expect=revision)])


async def test_a_read_that_missed_fills_the_cache(backend: FileBackend, tmp_path: Path) -> None:
    revision = await backend.commit([Put("k/a", b"v1")])
    await backend.close()
    reopened = FileBackend(tmp_path / "store")  # an empty cache over the same files
    try:
        assert await reopened.get("k/a") == Entry("k/a", b"v1", revision)
        with mock.patch.object(FileBackend, "_get", side_effect=AssertionError("file read")):
            assert await reopened.get("k/a") == Entry("k/a", b"v1", revision)
    finally:
        await reopened.close()


_keys = st.sampled_from(["a", "b", "d/c", "d/e"])
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _keys, st.binary(max_size=8)),
        st.tuples(st.just("delete"), _keys, st.just(b"")),
        st.tuples(st.just("get"), _keys, st.just(b"")),
    ),
    max_size=30,
)


@settings(max_examples=40)
@given(ops=_ops, size=st.integers(min_value=1, max_value=3))
def test_reads_through_the_cache_match_the_files(
    ops: list[tuple[str, str, bytes]], size: int
) -> None:
    """Whatever the mix and however small the cache, every read answers what a
    model says, and a backend reopened on the same files (no cache) agrees."""
    import asyncio
    import tempfile

    async def run(root: Path) -> None:
        store = FileBackend(root)
        store._cache = EntryCache(size)
        model: dict[str, tuple[bytes, int]] = {}
        try:
            for kind, key, value in ops:
                if kind == "put":
                    model[key] = (value, await store.commit([Put(key, value)]))
                elif kind == "delete":
                    await store.commit([Delete(key)])
                    model.pop(key, None)
                else:
                    found = await store.get(key)
                    expected = model.get(key)
                    assert (found.value, found.revision) == expected if found else expected is None
        finally:
            await store.close()
        fresh = FileBackend(root)
        try:
            for key in ("a", "b", "d/c", "d/e"):
                found = await fresh.get(key)
                expected = model.get(key)
                assert (found.value, found.revision) == expected if found else expected is None
        finally:
            await fresh.close()

    with tempfile.TemporaryDirectory() as root:
        asyncio.run(run(Path(root) / "store"))
