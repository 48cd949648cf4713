"""The chunked, resumable snapshot transfer (consensus/snapshot_stream.py, consensus/dumps.py).

Leader and follower are real :class:`SnapshotStore` objects on real files; every
chunk and acknowledgement goes through the wire's encoder and strict decoder,
as between two nodes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consensus._vendor.pysyncobj.config import SERIALIZER_STATE
from consensus.commands import Txn
from consensus.dumps import SnapshotStore
from consensus.journal import DurableJournal
from consensus.snapshot import RaftPoint
from consensus.snapshot_stream import (
    Chunk,
    ChunkAck,
    IncomingSnapshot,
    OutgoingSnapshot,
    SnapshotId,
    make_chunk,
)
from consensus.state import KVState
from consensus.wire import decode_message, encode_message
from sdk.physical import Put

CHUNK = 4096
POINT = RaftPoint((b"\x00last", 2999, 4), (b"\x00prev", 2998, 4), ("10.0.0.1:1", "10.0.0.2:1"))


def big_state(seed: int = 0) -> KVState:
    state = KVState()
    for index in range(2, 3000):
        value = f"{seed}-{index}".encode() * 8
        state.apply(index, Txn(f"id-{index}", (Put(f"k/{index:05d}", value),)))
    return state


class Node:
    """A snapshot store with its own journal in ``root``."""

    def __init__(self, root: Path, state: KVState | None = None) -> None:
        root.mkdir(mode=0o700, exist_ok=True)
        self.root = root
        self.state = state or KVState()
        self.journal = DurableJournal(root / "journal")
        if len(self.journal) == 0:
            self.journal.add(b"\x01", 1, 0)
        self.store = SnapshotStore(root / "dump.jsonl", self.state, self.journal, chunk=CHUNK)
        self.store.preload()

    def compact(self, point: RaftPoint = POINT) -> None:
        self.store.serialize((None, point.last, point.prev, set()), point.prev[1])
        while (status := self.store.checkSerializing())[0] == SERIALIZER_STATE.SERIALIZING:
            pass
        assert status[0] == SERIALIZER_STATE.SUCCESS

    def close(self) -> None:
        self.store.close()
        self.journal._destroy()


@pytest.fixture
def nodes(tmp_path: Path):  # type: ignore[no-untyped-def]
    made: list[Node] = []

    def make(name: str, state: KVState | None = None) -> Node:
        node = Node(tmp_path / name, state)
        made.append(node)
        return node

    yield make
    for node in made:
        node.close()


def over_the_wire(message: dict[str, object]) -> dict[str, object]:
    key = os.urandom(32)
    decoded = decode_message(encode_message(message, key), key)
    assert isinstance(decoded, dict)
    return decoded


def step(leader: SnapshotStore, follower: SnapshotStore, peer: object) -> object:
    """One chunk from the leader to the follower and its answer back; None if none to send."""
    chunk = leader.getTransmissionData(peer)
    if chunk is None:
        return None
    sent = over_the_wire(
        {"type": "append_entries", "term": 1, "commit_index": 1, "serialized": chunk}
    )
    result = follower.setTransmissionData(sent["serialized"])
    if isinstance(result, ChunkAck):
        reply = over_the_wire(
            {
                "type": "next_node_idx",
                "next_node_idx": 1,
                "reset": False,
                "success": False,
                "snapshot": result,
            }
        )
        leader.onTransmissionAck(peer, reply["snapshot"])
    return result


def run(
    leader: SnapshotStore, follower: SnapshotStore, peer: object = "p", limit: int = 10_000
) -> tuple[object, int]:
    """Stream until the follower's final answer; (answer, bytes of chunk data sent)."""
    sent = 0
    for _ in range(limit):
        before = leader._outgoing.get(peer)
        start = before.sent if before else 0
        result = step(leader, follower, peer)
        after = leader._outgoing.get(peer)
        if after is not None and after is before:
            sent += max(0, after.sent - start)
        if result is not None and not isinstance(result, ChunkAck):
            return result, sent
    raise AssertionError("no end")


def cut_after(leader: SnapshotStore, follower: SnapshotStore, peer: object, stop_at: int) -> int:
    """Stream until the follower holds at least ``stop_at`` bytes, then cut the link."""
    while follower._incoming.held < stop_at:
        result = step(leader, follower, peer)
        assert isinstance(result, ChunkAck)
    leader.cancelTransmisstion(peer)  # what the engine does when the node disconnects
    return follower._incoming.held


def size_of(node: Node) -> int:
    assert node.store.dump_id is not None
    return node.store.dump_id[1]


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fraction=st.floats(0.0, 0.99))
def test_resume_after_a_cut_at_any_offset_sends_only_the_rest(nodes, fraction: float) -> None:  # type: ignore[no-untyped-def]
    name = f"{os.urandom(4).hex()}"
    leader = nodes(f"leader-{name}", big_state())
    leader.compact()
    follower = nodes(f"follower-{name}")
    size = size_of(leader)

    stop_at = min(int(size * fraction), size - CHUNK - 1)  # cut before the last chunk
    held = cut_after(leader.store, follower.store, "p", stop_at)
    answer, resent = run(leader.store, follower.store, "p")

    assert answer is True
    assert resent == size - held, "the reconnected leader continued where the follower stood"
    assert follower.store.dump_id == leader.store.dump_id
    assert (follower.root / "dump.jsonl").read_bytes() == (leader.root / "dump.jsonl").read_bytes()


def test_a_restarted_follower_and_a_new_leader_with_the_same_snapshot_resume(nodes) -> None:  # type: ignore[no-untyped-def]
    old = nodes("old", big_state())
    old.compact()
    new = nodes("new", big_state())
    new.compact()
    assert new.store.dump_id == old.store.dump_id, "the same state at the same index: the same dump"
    follower = nodes("follower")
    size = size_of(old)

    held = cut_after(old.store, follower.store, "p", size // 2)
    follower.store.close()
    follower.journal._destroy()
    restarted = Node(follower.root)  # the partial file and its id survive a restart
    try:
        assert restarted.store._incoming.held == held
        answer, resent = run(new.store, restarted.store, "p")
        assert answer is True
        assert resent == size - held
    finally:
        restarted.close()


def test_a_different_snapshot_restarts_from_zero(nodes) -> None:  # type: ignore[no-untyped-def]
    old = nodes("old", big_state(seed=1))
    old.compact()
    other = nodes("other", big_state(seed=2))
    other.compact()
    assert other.store.dump_id != old.store.dump_id
    follower = nodes("follower")

    cut_after(old.store, follower.store, "p", size_of(old) // 2)
    answer, resent = run(other.store, follower.store, "p")

    assert answer is True
    assert resent == size_of(other), "nothing of the other dump was kept"
    assert follower.store.dump_id == other.store.dump_id
    follower.store.deserialize()  # what the engine does once the follower answers True
    assert follower.state.get("k/00002") == other.state.get("k/00002")


def test_a_corrupted_chunk_is_refused_and_sent_again(nodes) -> None:  # type: ignore[no-untyped-def]
    leader = nodes("leader", big_state())
    leader.compact()
    follower = nodes("follower")
    step(leader.store, follower.store, "p")  # the probe
    step(leader.store, follower.store, "p")  # the first chunk
    held = follower.store._incoming.held

    good = leader.store.getTransmissionData("p")
    assert isinstance(good, Chunk) and good.offset == held
    flipped = bytes([good.data[0] ^ 1]) + good.data[1:]
    bad = Chunk(good.snapshot, good.size, good.offset, flipped, good.sha)

    ack = follower.store.setTransmissionData(bad)
    assert ack == ChunkAck(good.snapshot, held, False)
    assert (follower.root / "dump.jsonl.incoming").stat().st_size == held, "nothing written"
    leader.store.onTransmissionAck("p", ack)
    again = leader.store.getTransmissionData("p")
    assert again == good, "the leader rewinds to what the follower holds"
    assert run(leader.store, follower.store, "p")[0] is True


def test_a_gap_is_refused_and_the_leader_rewinds(tmp_path: Path) -> None:
    data = os.urandom(10 * CHUNK)
    snapshot = SnapshotId(10, 2, hashlib.sha256(data).hexdigest())
    incoming = IncomingSnapshot(tmp_path / "dump.jsonl")
    ack, done = incoming.receive(
        make_chunk(snapshot, len(data), 2 * CHUNK, data[2 * CHUNK : 3 * CHUNK])
    )
    assert (ack, done) == (ChunkAck(snapshot, 0, False), None)
    for offset in range(0, len(data), CHUNK):
        ack, done = incoming.receive(
            make_chunk(snapshot, len(data), offset, data[offset : offset + CHUNK])
        )
        ack, _ = incoming.receive(
            make_chunk(snapshot, len(data), offset, data[offset : offset + 10])
        )
        assert ack.ok, "a duplicate is harmless"
    assert done == incoming.path
    assert done.read_bytes() == data


def test_the_leader_keeps_a_bounded_window_and_rewinds_after_a_stall(tmp_path: Path) -> None:
    path = tmp_path / "dump"
    path.write_bytes(os.urandom(20 * CHUNK))
    now = [0.0]
    snapshot = SnapshotId(1, 1, "0" * 64)
    stream = path.open("rb")
    out = OutgoingSnapshot(
        stream, snapshot, 20 * CHUNK, CHUNK, window=4, stall=5.0, clock=lambda: now[0]
    )
    try:
        probe = out.next_chunk()
        assert probe is not None and probe.data == b"" and out.next_chunk() is None
        out.on_ack(ChunkAck(snapshot, 3 * CHUNK, True))  # the follower already holds 3 chunks
        sent = [out.next_chunk() for _ in range(6)]
        assert [c.offset for c in sent if c] == [3 * CHUNK, 4 * CHUNK, 5 * CHUNK, 6 * CHUNK]
        assert sent[4:] == [None, None], "at most four chunks unacknowledged"
        now[0] = 6.0
        again = out.next_chunk()
        assert again is not None and again.offset == 3 * CHUNK, "a stall rewinds to the last ack"
    finally:
        out.close()


# -- the chunk messages on the wire (property tests) -------------------------------------------

ints = st.integers(0, 2**63 - 1)
snapshot_ids = st.builds(SnapshotId, ints, ints, st.binary(min_size=32, max_size=32).map(bytes.hex))
chunks = st.builds(
    lambda sid, data, offset, extra: make_chunk(sid, offset + len(data) + extra, offset, data),
    snapshot_ids,
    st.binary(max_size=300),
    st.integers(0, 2**35),
    st.integers(0, 2**20),
)
acks = st.builds(ChunkAck, snapshot_ids, ints, st.booleans())


def chunk_message(chunk: Chunk) -> dict[str, object]:
    return {"type": "append_entries", "term": 3, "commit_index": 9, "serialized": chunk}


def ack_message(ack: ChunkAck) -> dict[str, object]:
    return {
        "type": "next_node_idx",
        "next_node_idx": 1,
        "reset": False,
        "success": False,
        "snapshot": ack,
    }


@given(st.lists(chunks, min_size=1, max_size=5), acks, st.data())
def test_chunk_messages_survive_any_split_of_the_stream(
    sent: list[Chunk], ack: ChunkAck, data: st.DataObject
) -> None:
    from consensus.wire import FrameBuffer, frame

    messages = [chunk_message(c) for c in sent] + [ack_message(ack)]
    stream = b"".join(frame(encode_message(m)) for m in messages)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    buffer, got = FrameBuffer(cap=1 << 20), []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        buffer.feed(stream[start:end])
        while (payload := buffer.next_frame()) is not None:
            got.append(decode_message(payload))
    assert got == messages


@given(chunks, st.data())
def test_a_truncated_chunk_message_is_refused(chunk: Chunk, data: st.DataObject) -> None:
    from consensus.wire import WireError

    raw = encode_message(chunk_message(chunk))
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(WireError):
        decode_message(raw[:cut])


def _raw_chunk(**fields: object) -> bytes:
    import orjson

    body: dict[str, object] = {
        "id": [5, 1, "ab" * 32],
        "size": 10,
        "offset": 0,
        "data": "",
        "sha": "cd" * 32,
    }
    body.update(fields)
    return orjson.dumps(
        {"type": "append_entries", "term": 1, "commit_index": 1, "serialized": body}
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"data": "QUFB" * (4 * 1024 * 1024 // 3 + 2)},  # over MAX_SNAPSHOT_CHUNK_BYTES
        {"size": 2, "data": "QUFB"},  # past the end of its snapshot
        {"size": 1 << 40},  # a snapshot bigger than any follower accepts
        {"offset": -1},
        {"offset": True},
        {"id": [5, 1, "AB" * 32]},  # digests are lowercase hex
        {"id": [5, 1]},
        {"sha": "cd" * 31},
        {"data": "not base64!"},
        {"extra": 1},
    ],
)
def test_oversized_or_malformed_chunks_are_refused(fields: dict[str, object]) -> None:
    from consensus.wire import WireError

    with pytest.raises(WireError):
        decode_message(_raw_chunk(**fields))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=70),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@given(st.sampled_from(["id", "size", "offset", "data", "sha"]), json_values)
def test_any_field_replaced_by_garbage_is_refused_or_still_a_chunk(
    field: str, value: object
) -> None:
    from consensus.wire import WireError

    try:
        decoded = decode_message(_raw_chunk(**{field: value}))
    except WireError:
        return
    chunk = decoded["serialized"]
    assert isinstance(chunk, Chunk)
    assert chunk.offset + len(chunk.data) <= chunk.size


@given(st.binary(max_size=400))
def test_garbage_bytes_never_decode_to_anything_but_a_valid_message(garbage: bytes) -> None:
    from consensus.wire import WireError

    with contextlib.suppress(WireError):
        decode_message(garbage)
