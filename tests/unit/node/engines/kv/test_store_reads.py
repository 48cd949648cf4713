"""A KV v2 store keeps what its reads found only while nothing stored changed:
a write anywhere, here or applied beneath the barrier, and the next read goes
to storage again; with the read cache off, every read does."""

from __future__ import annotations

from typing import Any

import pytest

from node.barrier.barrier import Barrier
from node.barrier.view import BarrierView
from node.engines.kv.records import KeyMetadata, MountConfig, now_rfc3339
from node.engines.kv.store import KVStore
from sdk import jsoncodec
from sdk.physical import Put, TxnOp
from tests.support.view_reads import count_reads


@pytest.fixture
def view(barrier: Barrier) -> BarrierView:
    return BarrierView(barrier, "logical/kv/")


async def _write(store: KVStore, path: str, body: dict[str, Any]) -> KeyMetadata:
    async def add(meta: KeyMetadata) -> list[TxnOp]:
        meta.add_version(now_rfc3339(), "", MountConfig())
        return [Put(store.version_key(meta, meta.current_version), jsoncodec.dumps(body))]

    return await store.mutate(path, add, create=True)


async def _write_from_another_node(
    barrier: Barrier, root_key: bytes, path: str, body: dict[str, Any]
) -> None:
    """``body`` written to ``path`` through a second barrier on the same storage, as
    another node's write arrives: beneath this node's barrier, unreported."""
    other = Barrier(barrier.physical)
    await other.unseal(root_key)
    await _write(KVStore(BarrierView(other, "logical/kv/")), path, body)


async def _read(store: KVStore, path: str) -> tuple[int, dict[str, Any]]:
    meta, _ = await store.load(path)
    assert meta is not None
    return meta.current_version, await store.version_data(meta, meta.current_version)


async def test_a_secret_read_again_with_nothing_changed_is_not_read_from_storage(
    view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    reads = count_reads(view, monkeypatch)
    first = await _read(store, "app")
    assert first == (1, {"v": 1}) and len(reads) == 2  # metadata, then the version
    assert await _read(store, "app") == first
    assert await store.load("missing") == (None, 0)
    assert await store.load("missing") == (None, 0)
    assert len(reads) == 3


async def test_the_existence_probe_keeps_nothing_for_later_reads(
    view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write probes first and then moves the generation: keeping the probe's
    read for reads would only cost the write."""
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    reads = count_reads(view, monkeypatch)
    assert await store.exists("app") and await store.exists("app")
    assert not await store.exists("missing")
    assert len(reads) == 3
    await _read(store, "app")
    assert len(reads) == 5


async def test_a_write_right_after_its_probe_takes_what_the_probe_read(
    view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    reads = count_reads(view, monkeypatch)
    assert await store.exists("app")
    await _write(store, "app", {"v": 2})
    assert reads == ["metadata/app"]
    await _write(store, "app", {"v": 3})  # no probe: the write reads for itself
    assert reads == ["metadata/app"] * 2
    assert await _read(store, "app") == (3, {"v": 3})


async def test_a_write_reads_again_when_anything_changed_since_its_probe(
    barrier: Barrier, view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    reads = count_reads(view, monkeypatch)
    assert await store.exists("app")
    await _write(store, "app", {"v": 2})  # moves the generation
    assert not await store.exists("new")
    await _write(store, "app", {"v": 3})  # the probe was of another path
    assert await store.exists("app")
    barrier.cache.invalidate(["logical/kv/elsewhere"])  # a write lands in between
    await _write(store, "app", {"v": 4})
    assert reads == ["metadata/app", "metadata/new", "metadata/app"] + ["metadata/app"] * 2
    assert await _read(store, "app") == (4, {"v": 4})


async def test_a_probe_that_raced_a_concurrent_write_only_costs_a_retry(
    root_key: bytes, barrier: Barrier, view: BarrierView
) -> None:
    """Even a stale probe (another node's write not yet reported here) loses no
    write: the transaction is conditioned on the revision the probe saw."""
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    assert await store.exists("app")
    await _write_from_another_node(barrier, root_key, "app", {"v": 2})
    meta = await _write(store, "app", {"v": 3})
    assert meta.current_version == 3


async def test_a_write_anywhere_and_the_next_read_goes_to_storage(
    barrier: Barrier, view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    await _read(store, "app")
    reads = count_reads(view, monkeypatch)

    await BarrierView(barrier, "logical/other/").put("unrelated", b"x")
    assert await _read(store, "app") == (1, {"v": 1})
    assert len(reads) == 2

    await _write(store, "app", {"v": 2})
    assert await _read(store, "app") == (2, {"v": 2})


async def test_a_change_applied_beneath_the_barrier_is_seen_on_the_next_read(
    barrier: Barrier, view: BarrierView, root_key: bytes
) -> None:
    """Another node's write reaches this one as storage changed underneath, and
    the invalidation that follows every applied entry (``node.cluster.invalidation``)."""
    here = KVStore(view)
    await _write(here, "app", {"v": 1})
    assert await _read(here, "app") == (1, {"v": 1})

    await _write_from_another_node(barrier, root_key, "app", {"v": 2})
    assert await _read(here, "app") == (1, {"v": 1})  # not told yet: as the read cache

    barrier.cache.invalidate(["logical/kv/metadata/app"])
    assert await _read(here, "app") == (2, {"v": 2})


async def test_a_change_while_a_read_runs_is_not_kept(
    barrier: Barrier, view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    real = view.get

    async def raced(key: str) -> object:
        found = await real(key)
        barrier.cache.invalidate(["logical/kv/elsewhere"])  # a write lands meanwhile
        return found

    monkeypatch.setattr(view, "get", raced)
    await _read(store, "app")
    monkeypatch.undo()
    reads = count_reads(view, monkeypatch)
    await _read(store, "app")
    assert len(reads) == 2


async def test_with_the_read_cache_off_every_read_goes_to_storage(
    barrier: Barrier, view: BarrierView, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = KVStore(view)
    await _write(store, "app", {"v": 1})
    barrier.cache.configure(barrier.cache.size, enabled=False)
    assert view.read_generation() is None
    reads = count_reads(view, monkeypatch)
    for _ in range(3):
        assert await _read(store, "app") == (1, {"v": 1})
    assert len(reads) == 6
