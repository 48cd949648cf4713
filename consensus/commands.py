"""The replicated command and result formats (JSON, versioned, never pickle).

Every entry Coffer puts in the Raft log is one of these commands, encoded as
compact UTF-8 JSON with base64 values. The vendored engine stores it behind a
one-byte entry type and nothing else (no pickle anywhere, see consensus/wire.py),
so a format change is a version bump, not a code change that silently
reinterprets old log entries.

A command carries a client-chosen ``id``: a retry of the same command (after a
timeout or a lost callback) is recognised by every replica and answered with
the first outcome instead of being applied twice.

Concurrent transactions travel together as one :class:`Batch` entry (format
version 2, ``{"v":2,"batch":[<v1 command>, ...]}``) so the per-entry Raft
costs are paid once per batch. Each inner command is a complete version 1
command with its own id and gets its own result; version 1 entries (every
single command, and all older journals) decode as before.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson

from sdk import jsoncodec
from sdk.physical import Check, Delete, Put, TxnOp
from sdk.random_pool import random_hex
from sdk.record import record

__all__ = [
    "BATCH_OVERHEAD",
    "BATCH_VERSION",
    "COMMAND_VERSION",
    "MAX_COMMAND_BYTES",
    "Applied",
    "Batch",
    "BatchResult",
    "Command",
    "CommandError",
    "EntryResult",
    "MemberChange",
    "Mismatch",
    "Rejected",
    "Restore",
    "Result",
    "Txn",
    "decode_command",
    "decode_result",
    "encode_batch",
    "encode_command",
    "encode_result",
    "is_canonical",
    "new_command_id",
    "result_from_obj",
    "result_to_obj",
]

COMMAND_VERSION = 1
#: Version of a batch entry; its inner commands are version 1.
BATCH_VERSION = 2
#: Largest encoded command; pysyncobj's batch size is set above it so a single
#: entry never takes the library's chunked path (which mis-frames some sizes).
MAX_COMMAND_BYTES = 8 * 1024 * 1024


class CommandError(ValueError):
    """A command that cannot be encoded or decoded."""


@record
class Txn:
    """Apply every op or none (revision checks first)."""

    id: str
    ops: tuple[TxnOp, ...]


@dataclass(frozen=True, slots=True)
class Restore:
    """Replace the whole key space with ``items`` (key, value) pairs."""

    id: str
    items: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberChange:
    """Record (or with ``address`` None, forget) the node id of a Raft peer."""

    id: str
    node_id: str
    address: str | None


Command = Txn | Restore | MemberChange


@dataclass(frozen=True, slots=True)
class Rejected:
    """The command was malformed on arrival; every replica rejects it alike."""

    reason: str


@dataclass(frozen=True, slots=True)
class Batch:
    """Transactions applied in order in one entry, each on its own (all-or-nothing
    per transaction, never across them). An inner command that cannot be
    decoded stays in its slot as :class:`Rejected`, so results stay aligned."""

    commands: tuple[Txn | Rejected, ...]


@dataclass(frozen=True, slots=True)
class Applied:
    """The command was applied at ``revision`` (its Raft log index)."""

    revision: int


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A revision check failed; nothing was applied."""

    key: str
    expected: int
    actual: int


Result = Applied | Mismatch | Rejected


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One result per inner command of a :class:`Batch`, in order."""

    results: tuple[Result, ...]


#: What applying one log entry returns.
EntryResult = Result | BatchResult


def new_command_id() -> str:
    return random_hex(16)


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _unb64(value: object) -> bytes:
    if not isinstance(value, str):
        raise CommandError("value must be a base64 string")
    try:
        # What base64.b64decode(validate=True) calls, without its copies; a
        # non-ASCII string raises ValueError (binascii.Error is one too).
        return binascii.a2b_base64(value, strict_mode=True)
    except ValueError as exc:
        raise CommandError("value is not valid base64") from exc


def _encode_op(op: TxnOp) -> dict[str, Any]:
    if isinstance(op, Put):
        return {"op": "put", "key": op.key, "value": _b64(op.value), "expect": op.expect}
    if isinstance(op, Delete):
        return {"op": "delete", "key": op.key, "expect": op.expect}
    return {"op": "check", "key": op.key, "expect": op.expect}


def encode_command(command: Command) -> bytes:
    body: dict[str, Any] = {"v": COMMAND_VERSION, "id": command.id}
    if isinstance(command, Txn):
        body["ops"] = [_encode_op(op) for op in command.ops]
    elif isinstance(command, Restore):
        body["restore"] = [[key, _b64(value)] for key, value in command.items]
    else:
        body["member"] = {"node_id": command.node_id, "address": command.address}
    # A lone surrogate in a key takes the standard library's path (ASCII escapes).
    blob = jsoncodec.dumps(body)
    if len(blob) > MAX_COMMAND_BYTES:
        raise CommandError(f"command of {len(blob)} bytes exceeds {MAX_COMMAND_BYTES}")
    return blob


_BATCH_HEAD = b'{"v":%d,"batch":[' % BATCH_VERSION
_BATCH_TAIL = b"]}"
#: Bytes a batch adds around its inner commands, besides one comma per extra command.
BATCH_OVERHEAD = len(_BATCH_HEAD) + len(_BATCH_TAIL)


def encode_batch(blobs: list[bytes]) -> bytes:
    """A batch of already-encoded :class:`Txn` commands (spliced, not re-encoded)."""
    blob = _BATCH_HEAD + b",".join(blobs) + _BATCH_TAIL
    if len(blob) > MAX_COMMAND_BYTES:
        raise CommandError(f"batch of {len(blob)} bytes exceeds {MAX_COMMAND_BYTES}")
    return blob


def _str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise CommandError(f"{what} must be a string")
    return value


class _Inexact(Exception):
    """orjson read a number where an integer belongs as a float (it does so for
    integers beyond 64 bits): decode the blob again with the exact parser."""


def _expect(value: object, *, required: bool, exact: bool) -> int | None:
    if value is None and not required:
        return None
    if type(value) is float and not exact:
        raise _Inexact
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CommandError(
            "expect must be a non-negative integer" + ("" if required else " or null")
        )
    return value


def _decode_op(raw: object, exact: bool) -> TxnOp:
    if type(raw) is dict and raw.get("op") == "put":
        # The common op, checked inline (every follower decodes every write):
        # anything unusual takes the full path below, which gives its error.
        key, value, expect = raw.get("key"), raw.get("value"), raw.get("expect")
        if (
            type(key) is str
            and type(value) is str
            and (expect is None or (type(expect) is int and expect >= 0))
        ):
            try:
                return Put(key, binascii.a2b_base64(value, strict_mode=True), expect)
            except ValueError:
                pass
    if not isinstance(raw, dict):
        raise CommandError("op must be an object")
    kind = raw.get("op")
    key = _str(raw.get("key"), "key")
    if kind == "put":
        expect = _expect(raw.get("expect"), required=False, exact=exact)
        return Put(key, _unb64(raw.get("value")), expect)
    if kind == "delete":
        return Delete(key, _expect(raw.get("expect"), required=False, exact=exact))
    if kind == "check":
        required = _expect(raw.get("expect"), required=True, exact=exact)
        assert required is not None
        return Check(key, required)
    raise CommandError(f"unknown op {kind!r}")


def decode_command(blob: bytes) -> Command | Batch:
    """Decode strictly: unknown versions and shapes are errors, never guesses.

    orjson parses first. ``sdk.jsoncodec.loads`` scans the whole blob for runs
    of 19 digits (an integer orjson would read as a float) before it parses,
    which for a batch of base64 values cost more than the parse itself. Here
    only the places where an integer belongs are checked: a float there, or
    anything orjson refuses, and the blob is decoded again exactly as before
    (``_decode_exact``; a property test compares the two on any input).
    """
    try:
        body = orjson.loads(blob)
    except orjson.JSONDecodeError:
        pass  # what orjson refuses, the exact parser may still read
    else:
        try:
            return _decode_parsed(body, exact=False)
        except _Inexact:
            pass
    return _decode_exact(blob)


def _decode_exact(blob: bytes) -> Command | Batch:
    """The reference decoding: ``sdk.jsoncodec`` (exact as ``json``), then the schema."""
    try:
        body = jsoncodec.loads(blob)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise CommandError("command is not valid JSON") from exc
    return _decode_parsed(body, exact=True)


def _decode_parsed(body: object, exact: bool) -> Command | Batch:
    if isinstance(body, dict) and body.get("v") == BATCH_VERSION:
        inner = body.get("batch")
        if set(body) != {"v", "batch"} or not isinstance(inner, list) or not inner:
            raise CommandError(
                f"a version {BATCH_VERSION} command must be a non-empty batch of commands"
            )
        return Batch(tuple([_decode_inner(item, exact) for item in inner]))
    return _decode_body(body, exact)


def _decode_inner(body: object, exact: bool) -> Txn | Rejected:
    try:
        command = _decode_body(body, exact)
    except CommandError as exc:
        return Rejected(str(exc))
    if not isinstance(command, Txn):
        return Rejected("a batch holds transactions only")
    return command


def _decode_body(body: object, exact: bool) -> Command:
    if not isinstance(body, dict):
        raise CommandError("command must be an object")
    version = body.get("v")
    if type(version) is float and not exact:
        raise _Inexact
    if version != COMMAND_VERSION:
        raise CommandError(f"unsupported command version {version!r}")
    command_id = _str(body.get("id"), "id")
    kinds = [name for name in ("ops", "restore", "member") if name in body]
    if len(kinds) != 1:
        raise CommandError("command needs exactly one of ops, restore, member")
    if kinds[0] == "ops":
        ops = body["ops"]
        if not isinstance(ops, list):
            raise CommandError("ops must be a list")
        return Txn(command_id, tuple([_decode_op(op, exact) for op in ops]))
    if kinds[0] == "restore":
        items = body["restore"]
        if not isinstance(items, list) or not all(
            isinstance(item, list) and len(item) == 2 for item in items
        ):
            raise CommandError("restore must be a list of [key, value] pairs")
        return Restore(command_id, tuple((_str(k, "key"), _unb64(v)) for k, v in items))
    member = body["member"]
    if not isinstance(member, dict):
        raise CommandError("member must be an object")
    address = member.get("address")
    return MemberChange(
        command_id,
        _str(member.get("node_id"), "node_id"),
        None if address is None else _str(address, "address"),
    )


def _canonical_expect(value: object, *, required: bool) -> bool:
    if value is None:
        return not required
    return type(value) is int and value >= 0


def _canonical_op(op: object) -> bool:
    kind = type(op)
    if kind is Put:
        assert isinstance(op, Put)
        return (
            type(op.key) is str
            and type(op.value) is bytes
            and _canonical_expect(op.expect, required=False)
        )
    if kind is Delete:
        assert isinstance(op, Delete)
        return type(op.key) is str and _canonical_expect(op.expect, required=False)
    if kind is Check:
        assert isinstance(op, Check)
        return type(op.key) is str and _canonical_expect(op.expect, required=True)
    return False


def is_canonical(command: object) -> bool:
    """Whether ``decode_command(encode_command(command))`` gives ``command`` back
    exactly (same values *and* types): then a node may apply its own command
    from the object instead of decoding the entry, and behave as every other
    replica does. Anything else (a ``bytearray`` value, a ``bool`` or negative
    ``expect``, a list of ops) is decoded from the log like any entry."""
    kind = type(command)
    if kind is Txn:
        assert isinstance(command, Txn)
        return (
            type(command.id) is str
            and type(command.ops) is tuple
            and all(_canonical_op(op) for op in command.ops)
        )
    if kind is Restore:
        assert isinstance(command, Restore)
        return (
            type(command.id) is str
            and type(command.items) is tuple
            and all(
                type(item) is tuple
                and len(item) == 2
                and type(item[0]) is str
                and type(item[1]) is bytes
                for item in command.items
            )
        )
    if kind is MemberChange:
        assert isinstance(command, MemberChange)
        return (
            type(command.id) is str
            and type(command.node_id) is str
            and (command.address is None or type(command.address) is str)
        )
    return False


def result_to_obj(result: Result) -> dict[str, Any]:
    if isinstance(result, Applied):
        return {"rev": result.revision}
    if isinstance(result, Mismatch):
        return {"mismatch": [result.key, result.expected, result.actual]}
    return {"rejected": result.reason}


def result_from_obj(body: object) -> Result:
    if isinstance(body, dict):
        revision = body.get("rev")
        if isinstance(revision, int) and not isinstance(revision, bool):
            return Applied(revision)
        mismatch = body.get("mismatch")
        if isinstance(mismatch, list) and len(mismatch) == 3:
            key, expected, actual = mismatch
            if isinstance(key, str) and isinstance(expected, int) and isinstance(actual, int):
                return Mismatch(key, expected, actual)
        if isinstance(body.get("rejected"), str):
            return Rejected(body["rejected"])
    raise CommandError("malformed result")


def encode_result(result: EntryResult) -> bytes:
    if isinstance(result, BatchResult):
        body: dict[str, Any] = {"batch": [result_to_obj(item) for item in result.results]}
    else:
        body = result_to_obj(result)
    return jsoncodec.dumps(body)


def decode_result(blob: bytes) -> EntryResult:
    try:
        body = jsoncodec.loads(blob)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise CommandError("result is not valid JSON") from exc
    if isinstance(body, dict) and isinstance(body.get("batch"), list):
        return BatchResult(tuple(result_from_obj(item) for item in body["batch"]))
    return result_from_obj(body)
