"""The WAL ring (resume or sync) and the hash tree a sync compares."""

from __future__ import annotations

import asyncio

import pytest

from node.replication import merkle
from node.replication.wal import Wal, WalRing


def _wal(index: int, key: str = "k", value: bytes | None = b"v") -> Wal:
    return Wal(index, ((key, value),))


def test_a_secondary_resumes_only_from_a_position_the_ring_still_holds() -> None:
    ring = WalRing(start=10, capacity=3)
    assert ring.can_resume(10) and not ring.can_resume(9) and not ring.can_resume(11)
    for index in (11, 12, 13):
        ring.append(_wal(index))
    assert ring.can_resume(10)
    assert [w.index for w in ring.after(10)] == [11, 12, 13]
    ring.append(_wal(14))  # over capacity: 11 goes, nobody resumes from 10 any more
    assert not ring.can_resume(10)
    assert ring.can_resume(11)
    assert [w.index for w in ring.after(11, limit=2)] == [12, 13]
    assert len(ring) == 3


def test_the_byte_bound_drops_old_entries_too_and_replays_are_ignored() -> None:
    ring = WalRing(start=0, capacity=100, max_bytes=200)
    for index in range(1, 6):
        ring.append(_wal(index, value=b"x" * 90))
    assert ring.start > 0 and ring.last == 5
    ring.append(_wal(3))
    assert ring.last == 5


def test_a_reset_forces_everyone_to_sync() -> None:
    ring = WalRing(start=0)
    ring.append(_wal(1))
    ring.reset(7)
    assert not ring.can_resume(1) and ring.can_resume(7)


def test_a_skip_is_a_reset_to_a_later_index() -> None:
    ring = WalRing(start=0)
    ring.append(_wal(1))
    ring.skip(7)
    assert not ring.can_resume(1) and ring.can_resume(7)
    assert (ring.start, ring.last, len(ring)) == (7, 7, 0)
    ring.append(_wal(5))  # queued before the skip: nobody is sent it any more
    ring.skip(6)
    assert (ring.start, ring.last, len(ring)) == (7, 7, 0)
    ring.append(_wal(8))
    assert [w.index for w in ring.after(7)] == [8] and ring.can_resume(7)


def test_a_skip_wakes_a_waiting_reader() -> None:
    async def scenario() -> bool:
        ring = WalRing(start=0)
        waiting = asyncio.create_task(ring.wait_beyond(0, 5.0))
        await asyncio.sleep(0)
        ring.skip(3)
        return await waiting

    assert asyncio.run(scenario()) is True


def test_a_reader_waits_for_the_next_entry_without_blocking_the_writer() -> None:
    async def scenario() -> tuple[bool, bool]:
        ring = WalRing(start=0)
        waiting = asyncio.create_task(ring.wait_beyond(0, 5.0))
        await asyncio.sleep(0)
        ring.append(_wal(1))
        timed_out = await ring.wait_beyond(1, 0.01)
        return await waiting, timed_out

    assert asyncio.run(scenario()) == (True, False)


def test_equal_data_has_equal_roots_and_a_diff_finds_only_changed_buckets() -> None:
    data = {f"key/{n}": f"value-{n}".encode() for n in range(300)}
    mine = dict(data)
    assert merkle.root(merkle.buckets(mine)) == merkle.root(merkle.buckets(data))
    mine["key/7"] = b"changed"
    mine["extra"] = b"x"
    del mine["key/9"]
    wanted = merkle.differing(merkle.buckets(mine), merkle.buckets(data))
    assert set(wanted) == {merkle.bucket_of(k) for k in ("key/7", "extra", "key/9")}
    for bucket in wanted:
        theirs = {k: v for k, v in data.items() if merkle.bucket_of(k) == bucket}
        own = {k: v for k, v in mine.items() if merkle.bucket_of(k) == bucket}
        puts, deletes = merkle.plan(theirs, own)
        for key, value in puts.items():
            mine[key] = value
        for key in deletes:
            del mine[key]
    assert mine == data


def test_a_tree_of_the_wrong_size_is_refused() -> None:
    with pytest.raises(ValueError):
        merkle.differing(["a"], merkle.buckets({}))
