"""Group commit: concurrent transactions share one Raft entry, each keeping its
own id, result and all-or-nothing semantics (consensus/batching.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from consensus import ChangeSet, RaftBackend, RaftConfigError
from consensus.batching import CommitBatcher
from consensus.bridge import LoopBridge
from consensus.commands import (
    BATCH_VERSION,
    MAX_COMMAND_BYTES,
    Applied,
    Batch,
    BatchResult,
    CommandError,
    Mismatch,
    Rejected,
    Txn,
    decode_command,
    decode_result,
    encode_batch,
    encode_command,
    encode_result,
    new_command_id,
)
from consensus.state import KVState
from consensus.transport import coalesce_acks
from harness.raft import lose_first_callback, make_config, open_single_node, single_node
from sdk.errors import RevisionMismatchError, StorageError
from sdk.physical import Check, Delete, Entry, Put


def txn(*ops: Put | Delete | Check) -> Txn:
    return Txn(new_command_id(), ops)


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[RaftBackend]:
    async with single_node(tmp_path / "raft") as store:
        yield store


# -- the format --------------------------------------------------------------------


def test_a_batch_is_spliced_version_1_commands_and_round_trips() -> None:
    first, second = txn(Put("a", b"\x00\xff")), txn(Delete("b", expect=3), Check("c", 1))
    blob = encode_batch([encode_command(first), encode_command(second)])

    assert json.loads(blob)["v"] == BATCH_VERSION
    assert [inner["v"] for inner in json.loads(blob)["batch"]] == [1, 1]
    assert decode_command(blob) == Batch((first, second))


def test_single_commands_keep_the_old_format() -> None:
    command = txn(Put("k", b"v"))
    blob = encode_command(command)

    assert json.loads(blob)["v"] == 1 and "batch" not in json.loads(blob)
    assert decode_command(blob) == command


def test_a_bad_inner_command_is_rejected_in_its_own_slot() -> None:
    good = txn(Put("k", b"v"))
    restore = b'{"v":1,"id":"r","restore":[]}'
    blob = encode_batch([encode_command(good), b'{"v":1,"ops":[]}', restore])

    decoded = decode_command(blob)

    assert isinstance(decoded, Batch)
    assert decoded.commands[0] == good
    assert isinstance(decoded.commands[1], Rejected)  # no id
    assert decoded.commands[2] == Rejected("a batch holds transactions only")


@pytest.mark.parametrize(
    "body",
    [{"v": BATCH_VERSION, "batch": []}, {"v": BATCH_VERSION}, {"v": BATCH_VERSION, "batch": {}}],
)
def test_malformed_batches_are_errors(body: dict[str, Any]) -> None:
    with pytest.raises(CommandError):
        decode_command(json.dumps(body).encode())


def test_an_oversized_batch_is_refused() -> None:
    half = b"x" * (MAX_COMMAND_BYTES // 2)
    with pytest.raises(CommandError, match="exceeds"):
        encode_batch([half, half])


def test_batch_results_round_trip() -> None:
    result = BatchResult((Applied(4), Mismatch("k", 1, 2), Rejected("bad")))

    assert decode_result(encode_result(result)) == result
    assert decode_result(encode_result(Applied(4))) == Applied(4)


# -- applying a batch (every replica) -----------------------------------------------


def test_each_transaction_of_a_batch_stands_alone() -> None:
    state = KVState()
    state.apply(1, txn(Put("guarded", b"old")))
    ok, doomed, also_ok = (
        txn(Put("a", b"1"), Delete("guarded-not-there")),
        txn(Put("guarded", b"new", expect=99), Put("never", b"x")),
        txn(Put("b", b"2")),
    )

    result, changes = state.apply(2, Batch((ok, doomed, Rejected("garbled"), also_ok)))

    # One revision per slot, as four entries at 2, 3, 4, 5 would have given.
    assert result == BatchResult(
        (Applied(2), Mismatch("guarded", 99, 1), Rejected("garbled"), Applied(5))
    )
    assert changes == ChangeSet(5, ("a", "b")), "every changed key, at the entry's last revision"
    assert state.get("guarded") == (b"old", 1)
    assert state.get("never") is None, "the mismatched transaction applied nothing"
    assert state.get("a") == (b"1", 2) and state.get("b") == (b"2", 5)
    assert state.result_for(ok.id) == Applied(2)
    assert state.result_for(doomed.id) == Mismatch("guarded", 99, 1)
    assert (state.applied_index, state.offset) == (2, 3)
    _, later = state.apply(3, txn(Put("c", b"3")))
    assert later == ChangeSet(6, ("c",)), "revisions go on after the batch's"


def test_inner_ids_are_remembered_so_a_retry_is_not_applied_twice() -> None:
    state = KVState()
    first = txn(Put("k", b"1"))
    state.apply(5, Batch((first, txn(Put("other", b"x")))))  # revisions 5 and 6
    state.apply(6, txn(Put("k", b"2")))  # revision 7

    # The retry of the inner command alone, and inside another batch.
    alone, alone_changes = state.apply(7, first)
    again, again_changes = state.apply(8, Batch((first, txn(Put("third", b"3")))))

    assert alone == Applied(5) and alone_changes is None
    assert again == BatchResult((Applied(5), Applied(10)))
    assert again_changes == ChangeSet(10, ("third",))
    assert state.get("k") == (b"2", 7), "the retry did not overwrite the later write"


def test_a_replayed_batch_index_answers_with_the_known_results() -> None:
    state = KVState()
    command = txn(Put("k", b"1"))
    state.apply(3, Batch((command, txn(Put("j", b"2")))))

    result, changes = state.apply(3, Batch((command, Rejected("x"))))

    assert result == BatchResult((Applied(3), Rejected("index 3 already applied")))
    assert changes is None
    assert state.offset == 1, "a replay hands out no revisions"


def test_the_revision_offset_travels_with_the_state() -> None:
    state = KVState()
    state.apply(1, Batch((txn(Put("a", b"1")), txn(Put("b", b"2")), txn(Put("c", b"3")))))
    copy = KVState()

    copy.load(state.capture())
    _, changes = copy.apply(2, txn(Put("d", b"4")))

    assert copy.get("c") == (b"3", 3)
    assert changes == ChangeSet(4, ("d",))


# -- the batcher, with a fake Raft ----------------------------------------------------


class FakeRaft:
    """Records submitted blobs; the test decides when each commits."""

    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self.callbacks: list[Callable[[Any, int], None]] = []
        self.state = KVState()

    def submit(
        self, blob: bytes, callback: Callable[[Any, int], None], decoded: Any = None
    ) -> None:
        self.blobs.append(blob)
        self.callbacks.append(callback)

    def commit(self, position: int) -> None:
        result, _ = self.state.apply(position + 1, decode_command(self.blobs[position]))
        self.callbacks[position](result, 0)  # as the replica hands it over


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def batcher_for(raft: FakeRaft, **limits: Any) -> CommitBatcher:
    loop = asyncio.get_running_loop()
    settings: dict[str, Any] = {
        "max_in_flight": 1,
        "max_commands": 64,
        "release_after": 30.0,
        "expire_after": 60.0,
    }
    settings.update(limits)
    return CommitBatcher(raft.submit, LoopBridge(loop), loop, **settings)


async def test_a_lone_write_leaves_at_once_as_a_plain_entry() -> None:
    raft = FakeRaft()
    batcher = batcher_for(raft)
    command = txn(Put("k", b"v"))

    future = batcher.submit(command, encode_command(command))
    await settle()

    assert raft.blobs == [encode_command(command)], "no timer, no batch wrapper"
    raft.commit(0)
    assert await future == Applied(1)


async def test_writes_arriving_while_one_is_in_flight_travel_together() -> None:
    raft = FakeRaft()
    batcher = batcher_for(raft)
    first = txn(Put("first", b"1"))
    futures = [batcher.submit(first, encode_command(first))]
    await settle()
    later = [txn(Put(f"k{n}", b"v")) for n in range(5)]
    futures += [batcher.submit(command, encode_command(command)) for command in later]
    await settle()
    assert len(raft.blobs) == 1, "held back while the first entry is in flight"

    raft.commit(0)
    await settle()

    assert len(raft.blobs) == 2
    assert decode_command(raft.blobs[1]) == Batch(tuple(later))
    raft.commit(1)
    assert await asyncio.gather(*futures) == [Applied(n) for n in range(1, 7)]
    assert (batcher.entries_sent, batcher.commands_sent) == (2, 6)


async def test_writes_of_one_key_in_one_batch_apply_in_order_with_own_revisions() -> None:
    raft = FakeRaft()
    batcher = batcher_for(raft)
    commands = [
        txn(Put("same", b"1")),
        txn(Put("same", b"2")),
        txn(Check("same", 2), Put("other", b"x")),
        txn(Put("same", b"3", expect=1)),  # stale: "same" moved on to 2
    ]

    futures = [batcher.submit(c, encode_command(c)) for c in commands]
    await settle()
    raft.commit(0)

    assert len(raft.blobs) == 1
    assert await asyncio.gather(*futures) == [
        Applied(1),
        Applied(2),
        Applied(3),
        Mismatch("same", 1, 2),
    ]
    assert raft.state.get("same") == (b"2", 2)


async def test_batches_stay_under_the_byte_and_count_limits() -> None:
    raft = FakeRaft()
    commands = [txn(Put(f"k{n}", b"v" * 100)) for n in range(7)]
    blobs = [encode_command(c) for c in commands]
    batcher = batcher_for(raft, max_in_flight=8, max_commands=3, max_bytes=2 * len(blobs[0]) + 40)

    futures = [batcher.submit(c, b) for c, b in zip(commands, blobs, strict=True)]
    await settle()

    sizes = []
    for blob in raft.blobs:
        decoded = decode_command(blob)
        sizes.append(len(decoded.commands) if isinstance(decoded, Batch) else 1)
        assert len(blob) <= 2 * len(blobs[0]) + 40
    assert sizes == [2, 2, 2, 1]
    for position in range(len(raft.blobs)):
        raft.commit(position)
    assert [type(result) for result in await asyncio.gather(*futures)] == [Applied] * 7


async def test_a_failed_entry_fails_each_caller_by_name_and_frees_its_slot() -> None:
    raft = FakeRaft()
    batcher = batcher_for(raft)
    commands = [txn(Put(f"k{n}", b"v")) for n in range(3)]
    futures = [batcher.submit(c, encode_command(c)) for c in commands]
    await settle()

    raft.callbacks[0](None, 4)  # NOT_LEADER
    assert await asyncio.gather(*futures) == ["NOT_LEADER"] * 3
    again = batcher.submit(commands[0], encode_command(commands[0]))
    await settle()
    assert raft.blobs[-1] == encode_command(commands[0])
    raft.commit(len(raft.blobs) - 1)
    assert isinstance(await again, Applied)


async def test_a_lost_callback_frees_the_slot_after_a_while() -> None:
    raft = FakeRaft()
    batcher = batcher_for(raft, release_after=0.05)
    lost, waiting = txn(Put("a", b"1")), txn(Put("b", b"2"))
    batcher.submit(lost, encode_command(lost))
    await settle()
    batcher.submit(waiting, encode_command(waiting))
    await settle()
    assert len(raft.blobs) == 1

    await asyncio.sleep(0.2)

    assert raft.blobs[-1] == encode_command(waiting)


async def test_batching_off_sends_one_entry_per_write() -> None:
    raft = FakeRaft()
    batcher = batcher_for(raft, max_commands=1)
    commands = [txn(Put(f"k{n}", b"v")) for n in range(3)]

    for command in commands:
        batcher.submit(command, encode_command(command))
    await settle()

    assert raft.blobs == [encode_command(c) for c in commands]


# -- a real one-node replica -------------------------------------------------------------


async def test_concurrent_writes_share_entries_and_each_applies_once(
    backend: RaftBackend,
) -> None:
    changes: list[ChangeSet] = []
    backend.subscribe(changes.append)
    start = backend._node.applied_index()  # Raft log entries, not revisions

    revisions = await asyncio.gather(*(backend.put(f"k{n}", str(n).encode()) for n in range(200)))

    entries = backend._node.applied_index() - start
    assert entries < 200 / 4, f"{entries} entries for 200 writes"
    assert len(set(revisions)) == 200, "every write has its own revision"
    assert backend.applied_index() == max(revisions)
    for n, revision in enumerate(revisions):
        assert await backend.get(f"k{n}") == Entry(f"k{n}", str(n).encode(), revision)
    await asyncio.sleep(0.05)  # change notifications travel through the loop bridge
    reported = {key: change.index for change in changes for key in change.keys}
    assert reported.keys() == {f"k{n}" for n in range(200)}
    for n, revision in enumerate(revisions):
        assert revision <= reported[f"k{n}"] < revision + 256, "reported with its own entry"
    await backend.wait_for_index(max(revisions), timeout=1)


async def test_a_mismatch_in_one_batched_transaction_leaves_the_others_applied(
    backend: RaftBackend,
) -> None:
    guarded = await backend.put("guarded", b"old")
    start = backend._node.applied_index()

    outcomes = await asyncio.gather(
        backend.commit([Put("a", b"1")]),
        backend.commit([Put("guarded", b"new", expect=guarded + 100), Put("never", b"x")]),
        backend.commit([Put("b", b"2")]),
        return_exceptions=True,
    )

    assert isinstance(outcomes[1], RevisionMismatchError)
    assert backend._node.applied_index() == start + 1, "all three in one entry"
    assert outcomes[2] == outcomes[0] + 2  # type: ignore[operator]
    assert (await backend.get("guarded")).value == b"old"  # type: ignore[union-attr]
    assert await backend.get("never") is None
    assert (await backend.get("a")).revision == outcomes[0]  # type: ignore[union-attr]


async def test_a_lost_batch_callback_is_retried_per_command_and_applied_once(
    tmp_path: Path,
) -> None:
    backend = await open_single_node(tmp_path / "raft", request_timeout=0.2)
    submitted = lose_first_callback(backend)
    try:
        revisions = await asyncio.gather(*(backend.put(f"k{n}", b"v") for n in range(5)))

        assert isinstance(decode_command(submitted[0]), Batch), "the lost entry was a batch"
        assert revisions == list(range(revisions[0], revisions[0] + 5)), "the first outcomes"
        for n in range(5):
            assert (await backend.get(f"k{n}")).revision == revisions[n]  # type: ignore[union-attr]
    finally:
        await backend.close()


async def test_old_single_entries_and_batches_replay_from_the_journal(tmp_path: Path) -> None:
    config = make_config(tmp_path / "raft")
    backend = await RaftBackend.open(config)
    await backend.wait_for_leader(10)
    # An entry exactly as the previous release wrote it: a bare version 1 Txn.
    old = txn(Put("old", b"single"))
    done: asyncio.Future[tuple[Any, int]] = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()
    backend._node.submit(
        encode_command(old),
        lambda result, error: loop.call_soon_threadsafe(done.set_result, (result, error)),
    )
    raw, error = await done
    assert error == 0 and raw == Applied(backend.applied_index()), "the result object itself"
    await asyncio.gather(*(backend.put(f"new{n}", b"batched") for n in range(20)))
    before = {key: await backend.get(key) for key in ["old", *(f"new{n}" for n in range(20))]}
    await backend.close()

    again = await RaftBackend.open(config)
    try:
        await again.wait_for_leader(10)
        await again.wait_for_index(max(entry.revision for entry in before.values() if entry), 10)
        assert {key: await again.get(key) for key in before} == before
        assert again._node.state.result_for(old.id) == Applied(before["old"].revision)  # type: ignore[union-attr]
    finally:
        await again.close()


# -- follower acknowledgements ------------------------------------------------------------


def ack(next_index: int, *, success: bool = True, reset: bool = False) -> dict[str, Any]:
    return {
        "type": "next_node_idx",
        "next_node_idx": next_index,
        "reset": reset,
        "success": success,
    }


def test_runs_of_successful_acks_fold_into_the_highest() -> None:
    deferred = [
        ("leader", ack(5)),
        ("other", ack(3)),
        ("leader", ack(7)),
        ("leader", ack(6)),  # a lower success changes nothing at the leader
        ("leader", ack(4, success=False, reset=True)),
        ("leader", ack(8)),
        ("leader", ack(9)),
    ]

    assert coalesce_acks(deferred) == [
        ("leader", ack(7)),
        ("other", ack(3)),
        ("leader", ack(4, success=False, reset=True)),
        ("leader", ack(9)),
    ]


@pytest.mark.parametrize("setting", ["batch_max_commands", "batch_max_in_flight"])
def test_batch_limits_must_be_positive(tmp_path: Path, setting: str) -> None:
    with pytest.raises(RaftConfigError, match="batch"):
        make_config(tmp_path, **{setting: 0})


async def test_revisions_stay_monotonic_across_a_dump_and_restart(tmp_path: Path) -> None:
    config = make_config(tmp_path / "raft")
    backend = await RaftBackend.open(config)
    await backend.wait_for_leader(10)
    revisions = await asyncio.gather(*(backend.put(f"k{n}", b"v") for n in range(30)))
    assert backend._node.state.offset > 0, "the writes were batched"
    journal = backend._node._journal
    first = journal.first_index()
    backend.force_compaction()
    for _ in range(500):
        if journal.first_index() > first:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("log compaction did not happen")
    applied = backend.applied_index()
    await backend.close()

    again = await RaftBackend.open(config)
    try:
        await again.wait_for_leader(10)
        await again.wait_for_index(applied, 10)
        assert again.applied_index() >= applied
        assert [(await again.get(f"k{n}")).revision for n in range(30)] == revisions  # type: ignore[union-attr]
        assert await again.put("later", b"x") > max(revisions)
    finally:
        await again.close()


async def test_wait_for_index_takes_revisions_and_raft_commit_indexes(
    backend: RaftBackend,
) -> None:
    revisions = await asyncio.gather(*(backend.put(f"k{n}", b"v") for n in range(40)))
    assert backend.applied_index() > backend.committed_index(), "batches used extra revisions"

    await backend.wait_for_index(max(revisions), timeout=1)
    await backend.wait_for_index(backend.committed_index(), timeout=1)
    with pytest.raises(StorageError, match="did not reach"):
        await backend.wait_for_index(backend.applied_index() + 1, timeout=0.1)
