"""RaftBackend beyond the conformance suite: the cluster-facing API, retries,
timeouts, restarts, compaction and snapshot export/import (one process)."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from consensus import ChangeSet, RaftBackend, RaftConfig
from consensus.commands import Applied, Txn, decode_command, new_command_id
from consensus.journal import RESERVE_LOW, DurableJournal
from consensus.node import RaftNode
from harness.ports import free_port
from harness.raft import lose_first_callback, make_config, open_single_node
from sdk.errors import InvalidRequestError, StorageError
from sdk.physical import Delete, Entry, Put


@pytest.fixture
def config(tmp_path: Path) -> RaftConfig:
    return make_config(tmp_path / "raft")


@pytest.fixture
async def backend(config: RaftConfig) -> AsyncIterator[RaftBackend]:
    store = await RaftBackend.open(config)
    await store.wait_for_leader(10)
    try:
        yield store
    finally:
        await store.close()


async def reopen(store: RaftBackend, config: RaftConfig) -> RaftBackend:
    await store.close()
    again = await RaftBackend.open(config)
    await again.wait_for_leader(10)
    return again


async def compact(store: RaftBackend) -> None:
    """Force a dump and wait until the journal was cut behind it."""
    journal = store._node._journal
    first = journal.first_index()
    store.force_compaction()
    for _ in range(500):
        if journal.first_index() > first:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("log compaction did not happen")


async def test_revision_is_the_entry_index_and_status_reports_it(backend: RaftBackend) -> None:
    revision = await backend.put("a", b"1")

    assert backend.applied_index() == revision
    assert backend.committed_index() >= revision
    status = backend.status()
    assert status["state"] == "leader"
    assert status["leader_id"] == "node-1"
    assert status["durability"] == "strict"
    assert status["peers"] == []
    assert backend.link_view() == (
        frozenset(),
        status["address"],
        backend.committed_index(),
        status["applied_index"],
    )
    assert backend.is_leader()
    assert [(s.node_id, s.leader, s.voter) for s in backend.configuration()] == [
        ("node-1", True, True)
    ]


async def test_the_leader_never_commits_past_its_own_fsync(
    backend: RaftBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = backend._node._journal
    violations: list[tuple[int, int]] = []
    real = journal.setRaftCommitIndex

    def checked(index: int) -> None:
        if index > journal.synced_index:
            violations.append((index, journal.synced_index))
        real(index)

    monkeypatch.setattr(journal, "setRaftCommitIndex", checked)
    await asyncio.gather(*(backend.put(f"k/{n}", b"v") for n in range(200)))

    assert violations == []
    assert journal.synced_index >= backend.committed_index()


def test_a_single_node_commits_its_election_no_op_only_after_its_fsync(
    config: RaftConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single node elects itself and appends its no-op in one tick; the engine
    committed it in that same tick, before any fsync (watched from before the
    election here; the test above could see it only when its patch won a race)."""
    node = RaftNode(config)
    journal = node._journal
    violations: list[tuple[int, int]] = []
    real = journal.setRaftCommitIndex

    def checked(index: int) -> None:
        if index > journal.synced_index:
            violations.append((index, journal.synced_index))
        real(index)

    monkeypatch.setattr(journal, "setRaftCommitIndex", checked)
    node.start()
    try:
        deadline = time.monotonic() + 10
        while not (node.is_leader() and node.commit_index() >= journal.last_index()):
            assert time.monotonic() < deadline, "the single node never committed its no-op"
            time.sleep(0.01)
    finally:
        node.stop()

    assert violations == []


async def test_a_failed_fsync_stops_the_node(
    backend: RaftBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await backend.put("before", b"1")

    def broken_disk(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken_disk)
    with pytest.raises(StorageError):
        await backend.put("after", b"2")
    for _ in range(100):
        if backend.status()["failure"]:
            break
        await asyncio.sleep(0.01)

    assert "Input/output error" in backend.status()["failure"]
    with pytest.raises(StorageError, match="raft node stopped"):
        await backend.get("before")


async def test_a_log_entry_is_its_type_byte_and_our_command(backend: RaftBackend) -> None:
    await backend.put("plain", b"v")

    regular = [raw for raw, _, _ in backend._node._journal if raw[:1] == b"\x00"]
    assert regular
    for raw in regular:
        assert isinstance(decode_command(raw[1:]), Txn)
    assert not backend._node._obj._methodToID  # no pickled method calls


async def test_the_node_keeps_zeros_written_ahead_of_its_journal(
    backend: RaftBackend, config: RaftConfig
) -> None:
    """So an append's fdatasync needs no file-system journal commit (consensus/journal.py)."""
    await backend.put("ahead", b"v")
    journal = backend._node._journal
    on_disk = (Path(config.data_dir) / "journal").stat().st_size
    assert on_disk - journal.size_bytes >= RESERVE_LOW


async def test_data_survives_a_restart(backend: RaftBackend, config: RaftConfig) -> None:
    revisions = {f"k/{n}": await backend.put(f"k/{n}", b"%d" % n) for n in range(20)}
    await backend.delete("k/3")

    again = await reopen(backend, config)
    try:
        assert await again.get("k/4") == Entry("k/4", b"4", revisions["k/4"])
        assert await again.get("k/3") is None
        assert len(await again.list("k/")) == 19
        assert await again.put("k/new", b"x") > max(revisions.values())
    finally:
        await again.close()


async def test_restart_from_a_dump_plus_the_journal_tail(
    backend: RaftBackend, config: RaftConfig
) -> None:
    for n in range(30):
        await backend.put(f"before/{n}", b"b")
    await compact(backend)
    for n in range(10):
        await backend.put(f"after/{n}", b"a")

    again = await reopen(backend, config)
    try:
        assert again._node._journal.first_index() > 1
        assert len(await again.list("before/")) == 30
        assert len(await again.list("after/")) == 10
    finally:
        await again.close()


def _splice_journal(full_path: Path, cut_path: Path) -> None:
    """Append the entries the cut journal has past ``full_path``'s end; install it."""
    full = DurableJournal(full_path)
    cut = DurableJournal(cut_path)
    for entry in cut[:]:
        if entry[1] > full.last_index():
            full.add(*entry)
    full.sync()
    full._destroy()
    cut._destroy()
    shutil.copy(full_path, cut_path)


async def test_an_interrupted_compaction_loses_nothing(
    tmp_path: Path, config: RaftConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crash between the dump rename and the journal cut (pysyncobj.md 2(a))."""
    root = Path(config.data_dir)
    store = await RaftBackend.open(config)
    await store.wait_for_leader(10)
    for n in range(5):
        await store.put(f"one/{n}", b"1")
    store = await reopen(store, config)  # new term: a no-op after the writes
    shutil.copy(root / "journal", tmp_path / "journal.full")
    await compact(store)
    for n in range(5):
        await store.put(f"two/{n}", b"2")
    await store.close()
    # The journal as the crash left it: every entry, from index 1, past the dump.
    await asyncio.to_thread(_splice_journal, tmp_path / "journal.full", root / "journal")

    again = await RaftBackend.open(config)
    await again.wait_for_leader(10)
    try:
        assert len(await again.list("two/")) == 5
        assert len(await again.list("one/")) == 5
    finally:
        await again.close()

    # Without the alignment pysyncobj clears the journal and drops "two/".
    shutil.copy(tmp_path / "journal.full", root / "journal")
    monkeypatch.setattr(RaftNode, "_align_journal_with_dump", lambda self: None)
    control = await RaftBackend.open(config)
    await control.wait_for_leader(10)
    try:
        assert await control.list("two/") == []
    finally:
        await control.close()


async def test_subscribers_see_changed_keys_on_the_loop(backend: RaftBackend) -> None:
    seen: list[ChangeSet] = []
    loop_thread = asyncio.get_running_loop()
    unsubscribe = backend.subscribe(lambda changes: seen.append(changes))

    revision = await backend.commit([Put("a", b"1"), Put("b/c", b"2"), Delete("missing")])
    await backend.delete("a")
    await asyncio.sleep(0.05)
    unsubscribe()
    await backend.put("ignored", b"x")
    await asyncio.sleep(0.05)

    assert seen[0] == ChangeSet(revision, ("a", "b/c"))
    assert seen[1].keys == ("a",)
    assert len(seen) == 2
    assert asyncio.get_running_loop() is loop_thread


async def test_wait_for_index(backend: RaftBackend) -> None:
    # A new leader applies its election no-op a tick after it knows it leads; a
    # write commits after it, so nothing moves the applied index behind our back.
    await backend.put("first", b"v")
    current = backend.applied_index()
    await backend.wait_for_index(current, timeout=0.1)

    waiter = asyncio.create_task(backend.wait_for_index(current + 1, timeout=5))
    await asyncio.sleep(0.02)
    assert not waiter.done()
    await backend.put("k", b"v")
    await waiter

    with pytest.raises(StorageError, match="did not reach"):
        await backend.wait_for_index(backend.applied_index() + 100, timeout=0.1)


async def test_a_lost_callback_times_out_and_the_applied_outcome_is_found(
    tmp_path: Path,
) -> None:
    backend = await open_single_node(tmp_path / "raft", request_timeout=0.2)
    submitted = lose_first_callback(backend, forget_outcomes=False)
    try:
        started = time.monotonic()
        revision = await backend.put("k", b"v")

        assert time.monotonic() - started >= 0.2
        assert len(submitted) == 1, "the replica already knew the id: no re-submission"
        assert await backend.get("k") == Entry("k", b"v", revision)
    finally:
        await backend.close()


async def test_a_resubmitted_command_is_applied_once(tmp_path: Path) -> None:
    """As on a follower whose replica has not applied the first attempt yet."""
    backend = await open_single_node(tmp_path / "raft", request_timeout=0.2)
    submitted = lose_first_callback(backend)
    try:
        revision = await backend.put("k", b"v")

        assert len(submitted) == 2 and submitted[0] == submitted[1], "same command id"
        assert await backend.get("k") == Entry("k", b"v", revision)
        assert backend.applied_index() == revision + 1, "the second entry changed nothing"
    finally:
        await backend.close()


async def test_an_attempt_on_a_leader_that_lost_its_lease_ends_before_its_timeout(
    tmp_path: Path,
) -> None:
    backend = await open_single_node(tmp_path / "raft", request_timeout=30, request_attempts=1)
    lose_first_callback(backend)  # the attempt would wait for its 30 s expiry
    await backend.wait_for_leader(10)
    backend._node.has_lease = lambda: False  # type: ignore[method-assign]
    try:
        with pytest.raises(StorageError, match="last: leader lease lost"):
            await backend.put("k", b"v")
    finally:
        await backend.close()


async def test_an_attempt_whose_callback_never_comes_expires(tmp_path: Path) -> None:
    backend = await open_single_node(tmp_path / "raft", request_timeout=0.2, request_attempts=1)
    lose_first_callback(backend)
    backend._node.is_leader = lambda: False  # type: ignore[method-assign]  # no lease watch
    try:
        with pytest.raises(StorageError, match="last: timeout"):
            await backend.put("k", b"v")
    finally:
        await backend.close()


async def test_own_entries_are_applied_from_the_submitted_commands(
    backend: RaftBackend,
) -> None:
    revisions = await asyncio.gather(*(backend.put(f"own{n}", b"v%d" % n) for n in range(20)))

    assert not backend._node._obj._proposed, "every own entry was taken, none decoded"
    for n, revision in enumerate(revisions):
        assert await backend.get(f"own{n}") == Entry(f"own{n}", b"v%d" % n, revision)


async def test_the_same_command_id_twice_applies_once(backend: RaftBackend) -> None:
    command = Txn(new_command_id(), (Put("k", b"v"),))

    first = await backend._run_command(command)
    await backend.put("k", b"later")
    second = await backend._run_command(command)

    assert first == second == Applied(first.revision)  # type: ignore[union-attr]
    assert (await backend.get("k")).value == b"later"  # type: ignore[union-attr]


async def test_writes_without_a_quorum_fail_in_bounded_time(tmp_path: Path) -> None:
    lonely = await RaftBackend.open(
        make_config(
            tmp_path / "raft",
            peers={"gone": f"127.0.0.1:{free_port()}"},
            request_timeout=0.2,
            request_attempts=3,
        )
    )
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    beating = asyncio.create_task(heartbeat())
    try:
        started = time.monotonic()
        with pytest.raises(StorageError, match="not confirmed after 3 attempts"):
            await lonely.put("k", b"v")
        elapsed = time.monotonic() - started
        assert elapsed < 3
        assert ticks > elapsed / 0.01 / 2, "the event loop kept running while the write waited"
        assert lonely.leader() is None
        assert await lonely.get("k") is None
    finally:
        beating.cancel()
        await lonely.close()


async def test_export_and_restore_round_trip(backend: RaftBackend, tmp_path: Path) -> None:
    values = {"a": b"1", "b/c": bytes(range(256)), "d/e/f": b""}
    for key, value in values.items():
        await backend.put(key, value)
    exported = await backend.export_snapshot()

    target = await open_single_node(tmp_path / "target")
    try:
        await target.put("stale", b"x")
        resets: list[ChangeSet] = []
        target.subscribe(resets.append)
        revision = await target.restore_snapshot(exported)
        await asyncio.sleep(0.02)

        assert await target.get("stale") is None
        for key, value in values.items():
            assert await target.get(key) == Entry(key, value, revision)
        assert resets[-1].reset
        assert await target.put("later", b"x") > revision
        with pytest.raises(InvalidRequestError):
            await target.restore_snapshot(exported[:-10])
    finally:
        await target.close()


async def test_closed_backends_refuse_work(backend: RaftBackend) -> None:
    waiter = asyncio.create_task(backend.wait_for_index(backend.applied_index() + 10, 10))
    await asyncio.sleep(0.01)
    await backend.close()
    await backend.close()

    with pytest.raises(StorageError, match="closed"):
        await waiter

    with pytest.raises(StorageError, match="closed"):
        await backend.get("k")
    with pytest.raises(StorageError, match="closed"):
        await backend.put("k", b"v")


async def test_membership_add_and_remove(backend: RaftBackend, tmp_path: Path) -> None:
    await backend.put("before", b"1")
    leader_address = backend.status()["address"]
    joiner = await RaftBackend.open(
        make_config(
            tmp_path / "joiner",
            node_id="node-2",
            peers={"node-1": leader_address},
            cluster_secret=backend._config.cluster_secret,
        )
    )
    try:
        await backend.add_peer("node-2", joiner.status()["address"])
        revision = await backend.put("after", b"2")
        await joiner.wait_for_index(revision, timeout=10)

        assert await joiner.get("before") is not None
        assert {s.node_id for s in backend.configuration()} == {"node-1", "node-2"}
        assert joiner.leader() is not None and joiner.leader().node_id == "node-1"  # type: ignore[union-attr]

        await backend.remove_peer("node-2")
        assert [s.node_id for s in backend.configuration()] == ["node-1"]
        assert await backend.put("alone", b"3") > revision
        with pytest.raises(InvalidRequestError):
            await backend.remove_peer("node-1")
    finally:
        await joiner.close()


async def test_close_leaves_no_thread_or_file_descriptor(tmp_path: Path) -> None:
    fds_before = len(os.listdir("/proc/self/fd"))
    store = await open_single_node(tmp_path / "raft")
    await store.put("k", b"v")
    assert any(thread.name == "coffer-raft-node-1" for thread in threading.enumerate())

    await store.close()

    assert not any(thread.name.startswith("coffer-raft") for thread in threading.enumerate())
    assert len(os.listdir("/proc/self/fd")) <= fds_before
