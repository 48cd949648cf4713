"""The Raft wire (consensus/wire.py): frames with a length cap, strict messages, no pickle.

Property tests feed the frame reader random splits, truncations, oversized
lengths and garbage, and the message decoder random JSON and bytes: it either
returns a message of a known schema or raises WireError, nothing else.
"""

from __future__ import annotations

import ast
import base64
import os
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.fernet import Fernet
from hypothesis import given, settings
from hypothesis import strategies as st

from consensus.commands import MAX_COMMAND_BYTES
from consensus.snapshot_stream import ChunkAck, SnapshotId, make_chunk
from consensus.wire import (
    APPEND_BATCH_BYTES,
    ENTRY_OVERHEAD,
    HANDSHAKE_FRAME_BYTES,
    MAX_FRAME_BYTES,
    MAX_SNAPSHOT_CHUNK_BYTES,
    FrameBuffer,
    WireError,
    decode_message,
    encode_message,
    frame,
)

ROOT = Path(__file__).resolve().parents[3]
ints = st.integers(min_value=0, max_value=2**63 - 1)
# Log entries are a type byte and our JSON (sent as text), or any bytes (base64).
commands = st.binary(min_size=1, max_size=64) | st.text(min_size=1, max_size=64).map(str.encode)
entries = st.lists(st.tuples(commands, ints, ints), max_size=5)
snapshot_ids = st.builds(SnapshotId, ints, ints, st.binary(min_size=32, max_size=32).map(bytes.hex))
chunks = st.builds(
    lambda sid, data, offset, extra: make_chunk(sid, offset + len(data) + extra, offset, data),
    snapshot_ids,
    st.binary(max_size=64),
    st.integers(0, 2**30),
    st.integers(0, 2**30),
)
acks = st.builds(ChunkAck, snapshot_ids, ints, st.booleans())

messages = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("request_vote"),
            "term": ints,
            "last_log_index": ints,
            "last_log_term": ints,
        },
        optional={"pre_vote": st.booleans(), "transfer": st.booleans()},
    ),
    st.fixed_dictionaries(
        {"type": st.just("response_vote"), "term": ints}, optional={"pre_vote": st.booleans()}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("append_entries"),
            "term": ints,
            "commit_index": ints,
            "entries": entries,
            "prevLogIdx": st.none() | ints,
            "prevLogTerm": st.none() | ints,
        },
        optional={"lease": ints},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("append_entries"),
            "term": ints,
            "commit_index": ints,
            "serialized": st.none() | chunks,
        },
        optional={"lease": ints},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("next_node_idx"),
            "next_node_idx": ints,
            "reset": st.booleans(),
            "success": st.booleans(),
        },
        optional={"term": ints, "lease": ints, "snapshot": acks},
    ),
    st.fixed_dictionaries(
        {"type": st.just("apply_command"), "command": commands}, optional={"request_id": ints}
    ),
    st.fixed_dictionaries(
        {"type": st.just("apply_command_response"), "request_id": ints},
        optional={"error": ints, "log_idx": ints, "log_term": ints},
    ),
    st.fixed_dictionaries({"type": st.just("timeout_now"), "term": ints}),
    st.just({"type": "coffer_ping"}),
    st.binary(min_size=32, max_size=32),
    st.text(min_size=1, max_size=40),
)
keys = st.none() | st.binary(min_size=32, max_size=32)


def frames_of(payloads: list[bytes]) -> bytes:
    return b"".join(frame(p) for p in payloads)


def drain(buffer: FrameBuffer) -> list[bytes]:
    out = []
    while (payload := buffer.next_frame()) is not None:
        out.append(payload)
    return out


# -- frames ---------------------------------------------------------------------------------


@given(st.lists(st.binary(max_size=300), max_size=8), st.data())
def test_frames_survive_any_split(payloads: list[bytes], data: st.DataObject) -> None:
    stream = frames_of(payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    buffer, got = FrameBuffer(cap=1024), []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        buffer.feed(stream[start:end])
        got += drain(buffer)
    assert got == payloads
    assert len(buffer) == 0


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=8), st.data())
def test_a_truncated_stream_yields_only_whole_frames(
    payloads: list[bytes], data: st.DataObject
) -> None:
    stream = frames_of(payloads)
    cut = data.draw(st.integers(0, len(stream) - 1))
    buffer = FrameBuffer(cap=1024)
    buffer.feed(stream[:cut])
    got = drain(buffer)
    assert got == payloads[: len(got)]
    assert len(got) < len(payloads)


@given(st.lists(st.binary(max_size=300), max_size=6), st.data())
def test_a_frame_boundary_is_where_whole_frames_end(
    payloads: list[bytes], data: st.DataObject
) -> None:
    """The reader stops reading there: nothing more is needed to hand out what it holds."""
    stream = frames_of(payloads)
    ends = {len(frames_of(payloads[:n])) for n in range(1, len(payloads) + 1)}
    cut = data.draw(st.integers(0, len(stream)))
    buffer = FrameBuffer(cap=1024)
    buffer.feed(stream[:cut])
    assert buffer.at_frame_boundary() == (cut in ends)
    if buffer.at_frame_boundary():
        got = drain(buffer)
        assert got == payloads[: len(got)] and len(buffer) == 0


@given(st.binary(max_size=64))
def test_garbage_is_no_frame_boundary_unless_its_lengths_add_up(garbage: bytes) -> None:
    buffer = FrameBuffer(cap=2**32)
    buffer.feed(garbage)
    if buffer.at_frame_boundary():
        assert b"".join(frames_of(drain(buffer))) == garbage


@given(st.integers(HANDSHAKE_FRAME_BYTES + 1, 2**32 - 1), st.binary(max_size=64))
def test_an_oversized_length_is_refused_from_its_four_bytes(length: int, rest: bytes) -> None:
    buffer = FrameBuffer()
    buffer.feed(struct.pack(">I", length) + rest)
    with pytest.raises(WireError, match="exceeds the cap"):
        buffer.next_frame()


def test_two_gib_prefix_is_refused_before_any_allocation() -> None:
    buffer = FrameBuffer(cap=MAX_FRAME_BYTES)
    buffer.feed(struct.pack(">I", 2**31))
    with pytest.raises(WireError):
        buffer.next_frame()
    # The reader stops reading once a frame within the cap cannot need more.
    small = FrameBuffer()
    small.feed(b"\x00\x00\x10\x00" + b"x" * HANDSHAKE_FRAME_BYTES)
    assert not small.wants_more()


@given(st.binary(max_size=2000))
def test_garbage_bytes_never_crash_the_frame_reader(garbage: bytes) -> None:
    buffer = FrameBuffer(cap=1024)
    buffer.feed(garbage)
    try:
        for payload in drain(buffer):
            assert len(payload) <= 1024
    except WireError:
        pass


# -- messages -------------------------------------------------------------------------------


def normalised(message: Any) -> Any:
    if isinstance(message, dict) and "entries" in message:
        return dict(message, entries=[tuple(entry) for entry in message["entries"]])
    return message


@given(messages, keys)
def test_every_schema_round_trips(message: Any, key: bytes | None) -> None:
    assert decode_message(encode_message(message, key), key) == normalised(message)


@given(messages, st.binary(min_size=32, max_size=32))
def test_a_message_for_another_connection_key_is_refused(message: Any, key: bytes) -> None:
    with pytest.raises(WireError):
        decode_message(encode_message(message, key), bytes(32) if key != bytes(32) else None)


@given(st.binary(max_size=500), keys)
def test_garbage_bytes_are_refused_or_a_valid_message(garbage: bytes, key: bytes | None) -> None:
    try:
        message = decode_message(garbage, key)
    except WireError:
        return
    assert decode_message(encode_message(message, key), key) == message


def _append(command: Any) -> dict[str, Any]:
    return {
        "type": "append_entries",
        "term": 1,
        "commit_index": 0,
        "entries": [[command, 1, 1]],
        "prevLogIdx": 0,
        "prevLogTerm": 0,
    }


@given(st.binary(min_size=1, max_size=300) | st.text(min_size=1, max_size=300).map(str.encode))
def test_an_entry_is_sent_as_text_only_where_that_is_no_longer_than_base64(raw: bytes) -> None:
    sent = orjson.loads(encode_message(_append_message(raw)))["entries"][0][0]
    as_base64 = orjson.dumps(base64.b64encode(raw).decode())
    assert len(orjson.dumps(sent)) <= len(as_base64)
    if isinstance(sent, dict):
        assert sent == {"t": raw.decode("utf-8")}
    # Base64, as nodes sent it before the text form, is still read.
    old = orjson.dumps(_append(base64.b64encode(raw).decode()))
    assert decode_message(old)["entries"] == [(raw, 1, 1)]


def _append_message(raw: bytes) -> dict[str, Any]:
    return dict(_append(None), entries=[(raw, 1, 1)])


def test_our_json_entries_travel_as_text() -> None:
    value = base64.b64encode(os.urandom(150))
    raw = b'\x00{"v":1,"id":"a","ops":[{"op":"put","key":"k","value":"%s","expect":null}]}' % value
    data = encode_message(_append_message(raw))
    assert value in data and base64.b64encode(raw) not in data
    assert decode_message(data)["entries"] == [(raw, 1, 1)]


@pytest.mark.parametrize(
    "command",
    [
        b"{}",
        b'{"t":""}',
        b'{"t":1}',
        b'{"t":"a","x":"b"}',
        b'{"b":"QQ=="}',
        b'["t","a"]',
        b'{"t":"\\ud800"}',
    ],
)
def test_malformed_entry_texts_are_refused(command: bytes) -> None:
    data = orjson.dumps(_append(None)).replace(b"null", command)
    with pytest.raises(WireError):
        decode_message(data)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    [
        "type",
        "term",
        "entries",
        "prevLogIdx",
        "prevLogTerm",
        "commit_index",
        "serialized",
        "command",
        "request_id",
        "error",
        "pre_vote",
        "hello",
        "node",
        "k",
        "m",
        "success",
        "reset",
        "next_node_idx",
        "last_log_index",
        "last_log_term",
        "data",
        "transmission",
    ]
)
type_names = st.sampled_from(
    [
        "request_vote",
        "response_vote",
        "append_entries",
        "next_node_idx",
        "apply_command",
        "apply_command_response",
        "timeout_now",
        "coffer_ping",
        "status",
        "add",
    ]
)


@settings(max_examples=300)
@given(st.dictionaries(field_names, json_values | type_names, max_size=7))
def test_random_json_objects_are_refused_or_valid(obj: dict[str, Any]) -> None:
    try:
        message = decode_message(orjson.dumps(obj))
    except WireError:
        return
    assert decode_message(encode_message(message)) == message


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "request_vote", "term": 1, "last_log_index": 1, "last_log_term": 1, "x": 1},
        {"type": "request_vote", "term": 1, "last_log_index": 1},
        {"type": "request_vote", "term": True, "last_log_index": 1, "last_log_term": 1},
        {"type": "request_vote", "term": -1, "last_log_index": 1, "last_log_term": 1},
        {"type": "request_vote", "term": 2**63, "last_log_index": 1, "last_log_term": 1},
        {"type": "request_vote", "term": 1.0, "last_log_index": 1, "last_log_term": 1},
        {"type": "status"},
        {
            "type": "append_entries",
            "term": 1,
            "commit_index": 1,
            "entries": [],
            "prevLogIdx": 1,
            "prevLogTerm": 1,
            "serialized": None,
        },
        {
            "type": "append_entries",
            "term": 1,
            "commit_index": 1,
            "transmission": "start",
            "data": "",
            "prevLogIdx": 1,
            "prevLogTerm": 1,
        },
        {
            "type": "append_entries",
            "term": 1,
            "commit_index": 1,
            "entries": [["!!", 1, 1]],
            "prevLogIdx": 1,
            "prevLogTerm": 1,
        },
        {
            "type": "append_entries",
            "term": 1,
            "commit_index": 1,
            "entries": [["", 1, 1]],
            "prevLogIdx": 1,
            "prevLogTerm": 1,
        },
        {"type": "apply_command", "command": "AA=", "request_id": 1},
        {"hello": base64.b64encode(b"short").decode()},
        {"node": ""},
        {"node": "a", "hello": "b"},
        {"k": base64.b64encode(bytes(32)).decode()},
        ["status"],  # a syncobj_admin command
        "readonly",
        123,
    ],
)
def test_malformed_messages_are_refused(raw: Any) -> None:
    with pytest.raises(WireError):
        decode_message(orjson.dumps(raw))


def test_non_json_and_objects_of_no_schema_cannot_be_sent() -> None:
    with pytest.raises(WireError):
        encode_message(["status"])
    with pytest.raises(WireError):
        encode_message({"type": "unknown"})
    with pytest.raises(WireError):
        encode_message(b"not a 32-byte key")


def test_the_largest_messages_fit_in_a_frame() -> None:
    fernet = Fernet(Fernet.generate_key())
    big = b"\x00" + os.urandom(MAX_COMMAND_BYTES)
    worst_index = 2**63 - 1
    small = [(b"\x01", worst_index, worst_index)] * (APPEND_BATCH_BYTES // (1 + ENTRY_OVERHEAD))
    largest = [
        {
            "type": "append_entries",
            "term": worst_index,
            "commit_index": worst_index,
            "entries": [(big, worst_index, worst_index)],
            "prevLogIdx": worst_index,
            "prevLogTerm": worst_index,
        },
        {
            "type": "append_entries",
            "term": worst_index,
            "commit_index": worst_index,
            "entries": small,
            "prevLogIdx": worst_index,
            "prevLogTerm": worst_index,
        },
        {
            "type": "append_entries",
            "term": worst_index,
            "commit_index": worst_index,
            "serialized": make_chunk(
                SnapshotId(worst_index, worst_index, "f" * 64),
                2**36,
                2**36 - MAX_SNAPSHOT_CHUNK_BYTES,
                os.urandom(MAX_SNAPSHOT_CHUNK_BYTES),
            ),
        },
        {"type": "apply_command", "command": big, "request_id": worst_index},
    ]
    for message in largest:
        token = fernet.encrypt(encode_message(message, os.urandom(32)))
        assert len(token) <= MAX_FRAME_BYTES
        frame(token)
    assert MAX_FRAME_BYTES < 32 * 1024 * 1024


# -- no pickle anywhere -----------------------------------------------------------------------

#: Modules that turn bytes into objects (or inflate them) and have no place here.
FORBIDDEN_MODULES = {
    "pickle",
    "cPickle",
    "_pickle",
    "copyreg",
    "marshal",
    "shelve",
    "dill",
    "cloudpickle",
    "gzip",
    "bz2",
    "lzma",
    "yaml",
}


def _forbidden_uses(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in FORBIDDEN_MODULES]
        elif isinstance(node, ast.ImportFrom):
            module = (node.module or "").split(".")[0]
            names = {a.name for a in node.names}
            if module in FORBIDDEN_MODULES or names & FORBIDDEN_MODULES:
                found.append(f"from {node.module} import {sorted(names)}")
            if module == "zlib" and names - {"crc32"}:
                found.append(f"from zlib import {sorted(names)}")
        elif isinstance(node, ast.Attribute):
            value = node.value
            if isinstance(value, ast.Name) and value.id == "zlib" and node.attr != "crc32":
                found.append(f"zlib.{node.attr}")
            if node.attr in {"__reduce__", "__reduce_ex__", "__setstate__"}:
                found.append(node.attr)
        elif isinstance(node, ast.FunctionDef) and node.name in {"__reduce__", "__reduce_ex__"}:
            found.append(node.name)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"eval", "exec", "__import__"}
        ):
            found.append(f"{node.func.id}()")
    return found


def test_no_code_path_in_consensus_unpickles_or_decompresses() -> None:
    """The whole package, the vendored engine included: nothing can unpickle
    (or inflate, or eval) bytes from the network or from disk, because nothing
    imports a way to. zlib.crc32 (the journal's record checksum) is the only
    zlib use."""
    offenders = {
        str(path.relative_to(ROOT)): uses
        for path in sorted((ROOT / "consensus").rglob("*.py"))
        if (uses := _forbidden_uses(ast.parse(path.read_text(), str(path))))
    }
    assert offenders == {}
    assert list((ROOT / "consensus").rglob("pickle*.py")) == []


def test_the_scan_would_see_a_pickle() -> None:
    """Control: the scan finds each way in."""
    source = (
        "import pickle\nfrom zlib import decompress\nimport zlib\nzlib.decompress(b'')\n"
        "from . import pickle as p\n"
    )
    assert len(_forbidden_uses(ast.parse(source))) == 4
