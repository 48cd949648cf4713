"""The Raft wire: length-prefixed frames of strictly schema'd JSON, no pickle.

pysyncobj sent ``zlib(pickle(message))`` (inside Fernet), so every holder of
the transport password could run code on every node, and it trusted a signed
32-bit length prefix, so a 2 GiB prefix made a node buffer whatever followed
(issue 14 item 4). The vendored engine now frames and encodes every message
through this module:

* **Frames** are a 4-byte big-endian unsigned length and that many bytes.
  :class:`FrameBuffer` checks the length against the connection's cap as soon
  as the four bytes are in, before it buffers anything for that frame; over
  the cap the connection is closed. A connection that has not finished its
  handshake has a cap of :data:`HANDSHAKE_FRAME_BYTES` (4 KiB); an identified
  peer's is :data:`MAX_FRAME_BYTES`, derived from the largest command.
* **Messages** are compact JSON (orjson) with bytes as base64, except log
  entries, which travel as their UTF-8 text where that is no longer
  (``{"t": ...}``; base64 is still read). Every message
  type has an explicit schema (:data:`SCHEMAS`): the decoder refuses unknown
  types, unknown or missing fields, wrong types, out-of-range integers and
  bad base64, raising :class:`WireError` (the connection is then closed).
  There is no compression.

Messages keep pysyncobj's in-memory shapes (dicts with a ``type``, log
entries as ``(command, index, term)`` tuples) so the engine's logic is
unchanged; only the bytes between nodes are ours.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from consensus.commands import MAX_COMMAND_BYTES
from consensus.snapshot_stream import (
    Chunk,
    ChunkAck,
    ChunkError,
    ack_from_obj,
    ack_to_obj,
    chunk_from_obj,
    chunk_to_obj,
)

__all__ = [
    "APPEND_BATCH_BYTES",
    "ENTRY_OVERHEAD",
    "HANDSHAKE_FRAME_BYTES",
    "MAX_FRAME_BYTES",
    "MAX_SNAPSHOT_CHUNK_BYTES",
    "SCHEMAS",
    "FrameBuffer",
    "WireError",
    "decode_message",
    "encode_message",
    "frame",
]


class WireError(ValueError):
    """Bytes that are not a valid frame or message; close the connection."""


_LENGTH: Final = struct.Struct(">I")
#: Frames before the handshake completed: a random key or a node address.
HANDSHAKE_FRAME_BYTES: Final = 4096
#: The largest snapshot chunk (its data) the leader may send in one message.
MAX_SNAPSHOT_CHUNK_BYTES: Final = 4 * 1024 * 1024
#: The largest single log entry: one command plus its one-byte type.
_MAX_ENTRY_BYTES: Final = MAX_COMMAND_BYTES + 1
#: What the engine counts per entry on top of its bytes when it fills an
#: AppendEntries (the vendored ``__getEntries``): more than the JSON around an
#: entry (two integers, brackets, quotes) costs before base64's 4/3.
ENTRY_OVERHEAD: Final = 64
#: AppendEntries carry entries up to this many counted bytes (or one bigger entry).
APPEND_BATCH_BYTES: Final = 1024 * 1024
_MAX_PAYLOAD: Final = max(
    _MAX_ENTRY_BYTES + ENTRY_OVERHEAD, APPEND_BATCH_BYTES, MAX_SNAPSHOT_CHUNK_BYTES
)
#: Any frame of an identified peer. Base64 in our JSON, then Fernet's own
#: base64 around the encrypted message: 16/9 of the payload, plus headroom
#: for framing and the entries' small fields. A test checks that the largest
#: message fits.
MAX_FRAME_BYTES: Final = _MAX_PAYLOAD * 16 // 9 + 256 * 1024
_MAX_INT: Final = 2**63 - 1


# -- frames -----------------------------------------------------------------------------


def frame(payload: bytes) -> bytes:
    if len(payload) > MAX_FRAME_BYTES:
        raise WireError(f"refusing to send a {len(payload)}-byte frame")
    return _LENGTH.pack(len(payload)) + payload


class FrameBuffer:
    """Reassembles frames from a byte stream, refusing oversized ones early."""

    def __init__(self, cap: int = HANDSHAKE_FRAME_BYTES) -> None:
        self.cap = cap
        self._buffer = bytearray()

    def __len__(self) -> int:
        return len(self._buffer)

    def wants_more(self) -> bool:
        """Whether reading on can still complete a frame within the cap."""
        return len(self._buffer) < self.cap + _LENGTH.size

    def at_frame_boundary(self) -> bool:
        """Whether the buffer holds whole frames only (and at least one)."""
        buffer = self._buffer
        size = len(buffer)
        offset = 0
        while offset + _LENGTH.size <= size:
            (length,) = _LENGTH.unpack_from(buffer, offset)
            offset += _LENGTH.size + length
        return offset == size and size > 0

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next_frame(self) -> bytes | None:
        """The next whole frame, ``None`` if incomplete; :class:`WireError` if too big."""
        if len(self._buffer) < _LENGTH.size:
            return None
        (length,) = _LENGTH.unpack_from(self._buffer)
        if length > self.cap:
            raise WireError(f"frame of {length} bytes exceeds the cap of {self.cap}")
        end = _LENGTH.size + length
        if len(self._buffer) < end:
            return None
        payload = bytes(self._buffer[_LENGTH.size : end])
        del self._buffer[:end]
        return payload

    def clear(self) -> None:
        self._buffer.clear()


# -- field kinds -------------------------------------------------------------------------

Kind = Callable[[Any], Any]
_TO_JSON: dict[Kind, Callable[[Any], Any]] = {}


def _fail(what: str) -> WireError:
    return WireError(f"malformed {what}")


def _int(value: Any) -> int:
    if type(value) is not int or not 0 <= value <= _MAX_INT:
        raise _fail("integer")
    return value


def _opt_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise _fail("boolean")
    return value


def _unb64(value: Any, limit: int) -> bytes:
    if type(value) is not str or len(value) > (limit + 2) // 3 * 4:
        raise _fail("bytes field")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _fail("base64") from exc


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _command(value: Any) -> bytes:
    raw = _untext(value) if type(value) is dict else _unb64(value, _MAX_ENTRY_BYTES)
    if not raw:
        raise _fail("command")
    return raw


def _untext(value: dict[str, Any]) -> bytes:
    text = value.get("t")
    if len(value) != 1 or type(text) is not str or len(text) > _MAX_ENTRY_BYTES:
        raise _fail("command text")
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate
        raise _fail("command text") from exc
    if len(raw) > _MAX_ENTRY_BYTES:
        raise _fail("command text")
    return raw


def _command_json(value: bytes) -> Any:
    """A command as ``{"t": <its UTF-8 text>}`` (a log entry is a type byte and our
    JSON), else as base64: the text form costs neither side a base64 pass (the
    slowest step of a follower's decode, issue 16), and is used only where its
    escaped form is no longer than base64 would be, so frames keep their bound."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return _b64(value)
    escaped = orjson.dumps(text)
    if len(escaped) + 6 > (len(value) + 2) // 3 * 4 + 2:  # {"t":…} against "…"
        return _b64(value)
    return orjson.Fragment(b'{"t":' + escaped + b"}")


def _entries(value: Any) -> list[tuple[bytes, int, int]]:
    if type(value) is not list:
        raise _fail("entries")
    out = []
    for entry in value:
        if type(entry) is not list or len(entry) != 3:
            raise _fail("entry")
        out.append((_command(entry[0]), _int(entry[1]), _int(entry[2])))
    return out


def _serialized(value: Any) -> Chunk | None:
    """A snapshot chunk (:mod:`consensus.snapshot_stream`), or None (a heartbeat)."""
    if value is None:
        return None
    try:
        return chunk_from_obj(value, MAX_SNAPSHOT_CHUNK_BYTES)
    except ChunkError as exc:
        raise WireError(str(exc)) from exc


def _snapshot_ack(value: Any) -> ChunkAck:
    try:
        return ack_from_obj(value)
    except ChunkError as exc:
        raise WireError(str(exc)) from exc


def _entries_json(value: Any) -> list[list[Any]]:
    return [[_command_json(bytes(entry[0])), entry[1], entry[2]] for entry in value]


def _serialized_json(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, Chunk) or len(value.data) > MAX_SNAPSHOT_CHUNK_BYTES:
        raise WireError("not a snapshot chunk of at most the chunk cap")
    return chunk_to_obj(value)


def _snapshot_ack_json(value: Any) -> Any:
    if not isinstance(value, ChunkAck):
        raise WireError("not a snapshot acknowledgement")
    return ack_to_obj(value)


_TO_JSON[_command] = lambda value: _command_json(bytes(value))
_TO_JSON[_entries] = _entries_json
_TO_JSON[_serialized] = _serialized_json
_TO_JSON[_snapshot_ack] = _snapshot_ack_json


# -- schemas ---------------------------------------------------------------------------------

#: type -> (required fields, optional fields), each field -> its kind.
SCHEMAS: Final[Mapping[str, tuple[Mapping[str, Kind], Mapping[str, Kind]]]] = {
    "request_vote": (
        {"term": _int, "last_log_index": _int, "last_log_term": _int},
        {"pre_vote": _bool, "transfer": _bool},
    ),
    "response_vote": ({"term": _int}, {"pre_vote": _bool}),
    # Either entries after (prevLogIdx, prevLogTerm), or a snapshot chunk.
    "append_entries": (
        {"term": _int, "commit_index": _int},
        {
            "entries": _entries,
            "prevLogIdx": _opt_int,
            "prevLogTerm": _opt_int,
            "serialized": _serialized,
            "lease": _int,
        },
    ),
    # "term": the follower's, when it refuses an older leader; "lease": the
    # leader's send stamp it echoes (the leader lease); "snapshot": how much of
    # the leader's snapshot it holds (consensus.snapshot_stream).
    "next_node_idx": (
        {"next_node_idx": _int, "reset": _bool, "success": _bool},
        {"term": _int, "lease": _int, "snapshot": _snapshot_ack},
    ),
    "apply_command": ({"command": _command}, {"request_id": _int}),
    "apply_command_response": (
        {"request_id": _int},
        {"error": _int, "log_idx": _int, "log_term": _int},
    ),
    "timeout_now": ({"term": _int}, {}),
    "coffer_ping": ({}, {}),
}
_APPEND_FORMS: Final = (
    frozenset({"type", "term", "commit_index", "entries", "prevLogIdx", "prevLogTerm"}),
    frozenset({"type", "term", "commit_index", "serialized"}),
)


def _spec(kind: str) -> tuple[frozenset[str], frozenset[str], dict[str, Kind], dict[str, Any]]:
    required, optional = SCHEMAS[kind]
    kinds = {**required, **optional}
    encoders = {name: _TO_JSON[check] for name, check in kinds.items() if check in _TO_JSON}
    return (
        frozenset(required) | {"type"},
        frozenset(kinds) | {"type"},
        kinds,
        encoders,
    )


#: type -> (required keys, allowed keys, field kinds, fields that need converting
#: to JSON), "type" included in both key sets: built once, not per message.
_SPECS: Final = {kind: _spec(kind) for kind in SCHEMAS}


def _check_typed(message: Mapping[str, Any], decode: bool) -> dict[str, Any]:
    kind = message.get("type")
    spec = _SPECS.get(kind) if type(kind) is str else None
    if spec is None:
        raise WireError(f"unknown message type {kind!r}"[:80])
    required, allowed, kinds, encoders = spec
    keys = message.keys()
    if not (required <= keys and keys <= allowed):
        raise WireError(f"wrong fields for {kind}")
    if kind == "append_entries" and frozenset(keys) - {"lease"} not in _APPEND_FORMS:
        raise WireError("append_entries is neither entries nor a snapshot chunk")
    out: dict[str, Any] = dict(message)
    if decode:
        for name, value in message.items():
            if name != "type":
                out[name] = kinds[name](value)
    else:
        for name, encode in encoders.items():
            if name in out:
                out[name] = encode(out[name])
    return out


# -- messages -------------------------------------------------------------------------------
#
# Top level: {"hello": <32 random bytes>} (the per-connection key exchange),
# {"node": "host:port" | "readonly"} (who is calling), a typed message
# {"type": ...}, or {"k": <key>, "m": <one of these>} for a message carrying
# the receiver's connection key (pysyncobj's replay guard).

_KEY_BYTES: Final = 32
_MAX_ADDRESS: Final = 300


def _to_json(message: Any) -> Any:
    if isinstance(message, bytes):
        if len(message) != _KEY_BYTES:
            raise WireError("a connection key is 32 bytes")
        return {"hello": _b64(message)}
    if isinstance(message, str):
        if not message or len(message) > _MAX_ADDRESS:
            raise WireError("bad node address")
        return {"node": message}
    if isinstance(message, dict):
        return _check_typed(message, decode=False)
    raise WireError(f"cannot encode a {type(message).__name__} on the raft wire")


#: The last typed message encoded without a key, and its bytes: the leader sends
#: the same AppendEntries to every follower that is caught up, and an encoding
#: depends on the message's value alone, so it is made once (any thread, any
#: node: equal messages have equal bytes).
_last_encoded: tuple[Any, bytes] = ({}, b"")


def encode_message(message: Any, key: bytes | None = None) -> bytes:
    """Encode one message (with the receiver's connection ``key``, if set)."""
    global _last_encoded
    last = _last_encoded
    if key is None and type(message) is dict and message == last[0]:
        return last[1]
    body = _to_json(message)
    if key is not None:
        body = {"k": _b64(key), "m": body}
    try:
        data = orjson.dumps(body)
    except TypeError as exc:  # a value of a type no schema allows
        raise WireError(str(exc)) from exc
    if key is None and type(message) is dict:
        # A copy (lists too: entries are immutable tuples), so a later change to
        # the caller's message cannot make a different message look equal.
        _last_encoded = (
            {name: list(v) if type(v) is list else v for name, v in message.items()},
            data,
        )
    return data


def _from_json(obj: Any) -> Any:
    if type(obj) is not dict:
        raise WireError("a message is a JSON object")
    if "type" in obj:
        return _check_typed(obj, decode=True)
    if len(obj) == 1 and "hello" in obj:
        key = _unb64(obj["hello"], _KEY_BYTES)
        if len(key) != _KEY_BYTES:
            raise _fail("connection key")
        return key
    if len(obj) == 1 and "node" in obj:
        node = obj["node"]
        if type(node) is not str or not node or len(node) > _MAX_ADDRESS:
            raise _fail("node address")
        return node
    raise WireError("unknown message")


def decode_message(data: bytes, key: bytes | None = None) -> Any:
    """Decode one message strictly; with ``key`` it must carry exactly that key."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise WireError("not JSON") from exc
    if key is None:
        return _from_json(obj)
    if type(obj) is not dict or set(obj) != {"k", "m"}:
        raise WireError("message without its connection key")
    if _unb64(obj["k"], _KEY_BYTES) != key:
        raise WireError("wrong connection key")
    return _from_json(obj["m"])
