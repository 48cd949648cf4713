"""Our snapshot format and the dump store that replaces pysyncobj's Serializer."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consensus import dumps
from consensus._vendor.pysyncobj.config import SERIALIZER_STATE
from consensus._vendor.pysyncobj.node import TCPNode
from consensus.commands import Applied, Mismatch, Txn
from consensus.dumps import SnapshotStore
from consensus.journal import DurableJournal
from consensus.snapshot import (
    RaftPoint,
    SnapshotError,
    _line,
    decode_snapshot,
    encode_snapshot,
)
from consensus.snapshot_stream import ChunkAck, SnapshotId, make_chunk
from consensus.state import KVState
from sdk.physical import Put

MARKER = b"PLAINTEXT-MARKER-\x00\xff"


def sample_state() -> KVState:
    state = KVState()
    state.apply(2, Txn("a", (Put("secret/app", MARKER), Put("b/c", b""))))
    state.apply(3, Txn("b", (Put("secret/app", b"x", expect=1),)))
    for index in range(4, 1400):
        state.apply(index, Txn(f"bulk-{index}", (Put(f"bulk/{index}", os.urandom(16)),)))
    return state


POINT = RaftPoint((b"\x00last", 1399, 2), (b"\x00prev", 1398, 2), ("10.0.0.1:1", "10.0.0.2:1"))


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(st.characters(codec=None), max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_JSON_VALUES)
def test_a_dump_line_is_byte_for_byte_what_the_standard_library_writes(value: object) -> None:
    """Dumps of one state must be identical on every node and across versions
    (a snapshot transfer resumes by the dump's digest), so the orjson fast path
    may never change a byte: control characters, DEL, non-ASCII text, lone
    surrogates and integers beyond 64 bits included."""
    assert _line(value) == json.dumps(value, separators=(",", ":")).encode("ascii") + b"\n"


def test_dump_round_trip() -> None:
    image = sample_state().capture()

    lines = list(encode_snapshot(image, POINT))
    decoded, point = decode_snapshot(lines)

    assert point == POINT
    assert decoded.data == image.data
    assert decoded.applied == image.applied
    assert decoded.results == image.results
    assert dict(decoded.results)["b"] == Mismatch("secret/app", 1, 2)
    assert dict(decoded.results)["a"] == Applied(2)


def test_every_line_is_json_and_values_are_base64_only() -> None:
    blob = b"".join(encode_snapshot(sample_state().capture(), POINT))

    lines = blob.splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert json.loads(lines[0])["format"] == "coffer-raft-snapshot"
    assert MARKER not in blob
    assert not blob.startswith(b"\x80"), "not a pickle"
    assert not blob.startswith(b"\x1f\x8b"), "not pysyncobj's gzip-pickle"


def test_an_export_has_no_raft_internals() -> None:
    blob = b"".join(encode_snapshot(sample_state().capture(), None))

    header = json.loads(blob.splitlines()[0])
    assert header["kind"] == "export"
    assert "raft" not in header
    assert decode_snapshot(blob.splitlines(keepends=True))[1] is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda lines: lines[:-1],  # truncated: no end marker
        lambda lines: lines[:3] + lines[4:],  # a chunk missing
        lambda lines: [lines[0].replace(b'"applied"', b'"applieD"'), *lines[1:]],
        lambda lines: [*lines, b'{"kv": []}\n'],  # data after the end
        lambda lines: [lines[0].replace(b"coffer-raft-snapshot", b"other"), *lines[1:]],
        lambda lines: [b"\x80\x02}q\x00.\n"],
    ],
)
def test_damaged_snapshots_are_refused(damage: object) -> None:
    lines = list(encode_snapshot(sample_state().capture(), POINT))

    with pytest.raises(SnapshotError):
        decode_snapshot(damage(lines))  # type: ignore[operator]


# -- SnapshotStore -------------------------------------------------------------------------


def wait_for(store: SnapshotStore) -> tuple[int, int | None]:
    deadline = time.monotonic() + 10
    while (status := store.checkSerializing())[0] == SERIALIZER_STATE.SERIALIZING:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    return status


def make_store(root: Path, state: KVState) -> tuple[SnapshotStore, DurableJournal]:
    root.mkdir(mode=0o700, exist_ok=True)
    journal = DurableJournal(root / "journal")
    journal.add(b"\x01", 1, 0)
    return SnapshotStore(root / "dump.jsonl", state, journal, chunk=4096), journal


def test_serialize_writes_a_private_durable_dump_off_thread(tmp_path: Path) -> None:
    state = sample_state()
    store, journal = make_store(tmp_path / "a", state)
    cluster = {TCPNode("10.0.0.2:1"), TCPNode("10.0.0.1:1")}

    store.serialize((None, POINT.last, POINT.prev, cluster), 1398)

    assert wait_for(store) == (SERIALIZER_STATE.SUCCESS, 1398)
    assert store.checkSerializing() == (SERIALIZER_STATE.NOT_SERIALIZING, None)
    dump = tmp_path / "a" / "dump.jsonl"
    assert stat.S_IMODE(dump.stat().st_mode) == 0o600
    assert not dump.with_name("dump.jsonl.tmp").exists()

    fresh = KVState()
    loaded = SnapshotStore(dump, fresh, journal, chunk=4096).deserialize()
    assert loaded[1:3] == (POINT.last, POINT.prev)
    assert {node.id for node in loaded[3]} == {"10.0.0.1:1", "10.0.0.2:1"}
    assert all(isinstance(node, TCPNode) for node in loaded[3])
    assert fresh.get("secret/app") == state.get("secret/app")
    store.close()
    journal._destroy()


def test_the_dump_writer_pauses_after_every_line_it_encodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Encoding holds the GIL; the writer hands it back after each line, so the
    event loop and the Raft thread do not wait for the whole dump (every node
    dumps at the same index)."""
    pauses: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        if threading.current_thread().name == "coffer-raft-dump":
            pauses.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(dumps.time, "sleep", sleep)
    store, journal = make_store(tmp_path / "a", sample_state())
    store.serialize((None, POINT.last, POINT.prev, set()), 1398)
    assert wait_for(store) == (SERIALIZER_STATE.SUCCESS, 1398)

    lines = (tmp_path / "a" / "dump.jsonl").read_bytes().count(b"\n")
    assert lines > 3, "1,400 keys take several lines"
    assert pauses == [dumps.DUMP_LINE_PAUSE] * lines
    store.close()
    journal._destroy()


def transfer(leader: SnapshotStore, follower: SnapshotStore, peer: object = "peer") -> object:
    """Run the chunk protocol between two stores until the follower's final answer."""
    for _ in range(10_000):
        chunk = leader.getTransmissionData(peer)
        assert chunk is not None, "the window never blocks when every chunk is acknowledged"
        result = follower.setTransmissionData(chunk)
        if not isinstance(result, ChunkAck):
            return result
        leader.onTransmissionAck(peer, result)
    raise AssertionError("the transfer never finished")


def leader_with_dump(root: Path) -> SnapshotStore:
    store, _ = make_store(root, sample_state())
    store.serialize((None, POINT.last, POINT.prev, set()), 1398)
    assert wait_for(store)[0] == SERIALIZER_STATE.SUCCESS
    return store


def test_a_snapshot_streams_to_a_follower_and_loads(tmp_path: Path) -> None:
    leader = leader_with_dump(tmp_path / "leader")
    follower_state = KVState()
    follower, journal = make_store(tmp_path / "follower", follower_state)

    loaded: list[int] = []
    follower.on_loaded = loaded.append

    assert transfer(leader, follower) is True
    follower.deserialize()
    assert loaded == [1399], "subscribers hear that every key may have changed"
    assert follower_state.get("secret/app") == (MARKER, 2)
    assert follower_state.applied_index == 1399
    assert follower.dump_id == leader.dump_id, "the installed dump keeps its identity"
    assert not list((tmp_path / "follower").glob("*.incoming*"))
    leader.close()
    follower.close()
    journal._destroy()


def _hold_first_chunk(leader: SnapshotStore, follower: SnapshotStore) -> None:
    result = follower.setTransmissionData(leader.getTransmissionData("peer"))
    assert isinstance(result, ChunkAck) and result.ok, "a partial snapshot held"


@pytest.mark.parametrize(("applied", "kept"), [(1398, True), (1399, False), (1500, False)])
def test_a_partial_snapshot_goes_once_the_follower_has_applied_past_it(
    tmp_path: Path, applied: int, kept: bool
) -> None:
    """A transfer the leader abandoned (the follower caught up by its log) leaves
    a partial at the snapshot's index (1399): once this node applied an entry at
    or past it, or restarts from a dump there, the partial goes."""
    leader = leader_with_dump(tmp_path / "leader")
    follower, journal = make_store(tmp_path / "follower", KVState())
    _hold_first_chunk(leader, follower)
    partial = list((tmp_path / "follower").glob("dump.jsonl.incoming*"))
    assert len(partial) == 2

    follower.compactionPoint(applied, 10, False)  # the engine applied entry ``applied``

    assert all(path.exists() for path in partial) is kept
    follower.close()
    if kept:  # a restart from a dump at the partial's index drops it as well
        os.replace(tmp_path / "leader" / "dump.jsonl", tmp_path / "follower" / "dump.jsonl")
        restarted = SnapshotStore(tmp_path / "follower" / "dump.jsonl", KVState(), journal, 4096)
        assert all(path.exists() for path in partial), "held until the dump is read"
        restarted.preload()
        assert not any(path.exists() for path in partial)
    leader.close()
    journal._destroy()


def test_a_follower_refuses_a_snapshot_it_already_holds_or_has_passed(tmp_path: Path) -> None:
    leader = leader_with_dump(tmp_path / "leader")
    state = KVState()
    follower, journal = make_store(tmp_path / "follower", state)
    journal.clear()
    journal.add(*POINT.prev)
    journal.add(*POINT.last)  # our log holds the snapshot's last entry: keep the log

    assert transfer(leader, follower, "a") == "have"
    journal.clear()
    journal.add(b"\x01", 5000, 3)
    state.apply(4999, Txn("late", ()))  # we applied past the snapshot

    assert transfer(leader, follower, "b") == "have"
    assert not (tmp_path / "follower" / "dump.jsonl").exists()
    leader.close()
    follower.close()
    journal._destroy()


def test_a_chunk_that_does_not_match_its_snapshot_is_refused_and_the_old_dump_kept(
    tmp_path: Path,
) -> None:
    follower, journal = make_store(tmp_path / "follower", KVState())
    (tmp_path / "follower" / "dump.jsonl").write_bytes(b"previous")
    body = b'{"format": "coffer-raft-snapshot"}\n'
    claimed = SnapshotId(7, 1, hashlib.sha256(b"something else").hexdigest())

    ack = follower.setTransmissionData(make_chunk(claimed, len(body), 0, body))

    assert ack == ChunkAck(claimed, 0, False), "the whole file fails its digest: start again"
    assert (tmp_path / "follower" / "dump.jsonl").read_bytes() == b"previous"
    assert follower.setTransmissionData(None) is None
    follower.close()
    journal._destroy()


def test_a_failed_load_marks_the_store_failed(tmp_path: Path) -> None:
    store, journal = make_store(tmp_path / "a", KVState())
    (tmp_path / "a" / "dump.jsonl").write_bytes(b"not a dump\n")

    with pytest.raises(SnapshotError):
        store.deserialize()
    assert store.failed is not None
    journal._destroy()


def test_serialize_returns_at_once_even_for_a_big_state(tmp_path: Path) -> None:
    """The library would pickle (or fork) on its tick thread; we copy and go."""
    state = KVState()
    for chunk in range(200):
        ops = tuple(Put(f"big/{chunk}/{n}", os.urandom(64)) for n in range(500))
        state.apply(chunk + 2, Txn(f"c{chunk}", ops))
    store, journal = make_store(tmp_path / "a", state)

    started = time.perf_counter()
    store.serialize((None, POINT.last, POINT.prev, set()), 1398)
    returned_after = time.perf_counter() - started
    first_status = store.checkSerializing()[0]

    assert wait_for(store)[0] == SERIALIZER_STATE.SUCCESS
    assert returned_after < 0.25, f"serialize blocked the tick thread for {returned_after:.3f}s"
    assert first_status == SERIALIZER_STATE.SERIALIZING
    store.close()
    journal._destroy()
