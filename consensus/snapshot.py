"""Our explicit snapshot format: JSON lines, base64 values, a SHA-256 trailer.

Used for the full dump pysyncobj compacts its log against and for
operator exports. Line one is a header; then chunks of key records, of
remembered command results and the member map; the last line holds the
SHA-256 of every byte before it, so a truncated or corrupted file is refused
instead of half-loaded. Encoding happens in many small ``json.dumps`` calls
so a background writer releases the GIL between chunks and never stalls the
Raft thread the way one giant pickle does.

A dump also carries the two log entries pysyncobj compares against its
journal at start-up (the entry at the snapshot index and the one before) and
the cluster membership, both as plain values. The header holds the state's
revision ``offset`` (:mod:`consensus.state`); snapshots made before batching
lack it and read as 0.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from consensus.commands import CommandError, Result, result_from_obj, result_to_obj
from consensus.journal import JournalEntry
from consensus.state import StateImage
from sdk import jsoncodec

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "RaftPoint",
    "SnapshotError",
    "decode_snapshot",
    "encode_snapshot",
]

FORMAT = "coffer-raft-snapshot"
FORMAT_VERSION = 1
_CHUNK = 512


class SnapshotError(ValueError):
    """A snapshot that is corrupt, truncated or of an unknown format."""


@dataclass(frozen=True, slots=True)
class RaftPoint:
    """Where a dump sits in the Raft log (pysyncobj's own bookkeeping)."""

    last: JournalEntry
    prev: JournalEntry
    cluster: tuple[str, ...]

    @property
    def index(self) -> int:
        return self.last[1]


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _unb64(value: object) -> bytes:
    if not isinstance(value, str):
        raise SnapshotError("expected a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise SnapshotError("invalid base64") from exc


def _line(obj: object) -> bytes:
    """One compact JSON line, byte for byte what ``json.dumps`` with ASCII escapes
    writes (dumps of one state are identical on every node and every version):
    orjson where its output is the same, the standard library otherwise."""
    try:
        line = orjson.dumps(obj)
    except TypeError:  # a lone surrogate, an integer beyond 64 bits
        line = b"\x80"
    if not line.isascii() or b"\x7f" in line:  # text json escapes and orjson does not
        line = json.dumps(obj, separators=(",", ":")).encode("ascii")
    return line + b"\n"


def _entry_obj(entry: JournalEntry) -> list[Any]:
    return [_b64(entry[0]), entry[1], entry[2]]


def _entry(raw: object) -> JournalEntry:
    if not (isinstance(raw, list) and len(raw) == 3):
        raise SnapshotError("malformed raft entry")
    command, index, term = raw
    if not isinstance(index, int) or not isinstance(term, int):
        raise SnapshotError("malformed raft entry")
    return (_unb64(command), index, term)


def encode_snapshot(image: StateImage, raft: RaftPoint | None) -> Iterator[bytes]:
    """Yield the snapshot line by line (a dump with ``raft``, else an export)."""
    digest = hashlib.sha256()

    def emit(obj: object) -> bytes:
        line = _line(obj)
        digest.update(line)
        return line

    header: dict[str, Any] = {
        "format": FORMAT,
        "v": FORMAT_VERSION,
        "kind": "dump" if raft else "export",
        "applied": image.applied,
        "keys": len(image.data),
        "results": len(image.results),
        "offset": image.offset,
    }
    if raft is not None:
        header["raft"] = {
            "last": _entry_obj(raft.last),
            "prev": _entry_obj(raft.prev),
            "cluster": list(raft.cluster),
        }
    yield emit(header)
    items = sorted(image.data.items())
    for start in range(0, len(items), _CHUNK):
        chunk = items[start : start + _CHUNK]
        yield emit({"kv": [[key, _b64(value), rev] for key, (value, rev) in chunk]})
    for start in range(0, len(image.results), _CHUNK):
        part = image.results[start : start + _CHUNK]
        yield emit({"ids": [[cid, result_to_obj(result)] for cid, result in part]})
    yield emit({"members": image.members})
    yield _line({"end": {"sha256": digest.hexdigest()}})


def _decode_kv(records: object, data: dict[str, tuple[bytes, int]]) -> None:
    if not isinstance(records, list):
        raise SnapshotError("kv must be a list")
    for record in records:
        if not (isinstance(record, list) and len(record) == 3):
            raise SnapshotError("malformed kv record")
        key, value, rev = record
        if not isinstance(key, str) or not isinstance(rev, int):
            raise SnapshotError("malformed kv record")
        data[key] = (_unb64(value), rev)


def _decode_ids(records: object, results: list[tuple[str, Result]]) -> None:
    if not isinstance(records, list):
        raise SnapshotError("ids must be a list")
    for record in records:
        if not (isinstance(record, list) and len(record) == 2 and isinstance(record[0], str)):
            raise SnapshotError("malformed id record")
        try:
            results.append((record[0], result_from_obj(record[1])))
        except CommandError as exc:
            raise SnapshotError(str(exc)) from exc


def decode_snapshot(lines: Iterable[bytes]) -> tuple[StateImage, RaftPoint | None]:
    """Parse and verify a whole snapshot; raise :class:`SnapshotError` on any flaw."""
    digest = hashlib.sha256()
    header: dict[str, Any] | None = None
    data: dict[str, tuple[bytes, int]] = {}
    results: list[tuple[str, Result]] = []
    members: dict[str, str] = {}
    ended = False
    for line in lines:
        if ended:
            raise SnapshotError("data after the end marker")
        try:
            obj = jsoncodec.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise SnapshotError("a line is not JSON") from exc
        if not isinstance(obj, dict):
            raise SnapshotError("a line is not an object")
        if "end" in obj:
            end = obj["end"]
            if not isinstance(end, dict) or end.get("sha256") != digest.hexdigest():
                raise SnapshotError("checksum mismatch")
            ended = True
            continue
        digest.update(line)
        if header is None:
            if obj.get("format") != FORMAT or obj.get("v") != FORMAT_VERSION:
                raise SnapshotError(
                    f"unknown snapshot format {obj.get('format')!r}/{obj.get('v')!r}"
                )
            header = obj
        elif "kv" in obj:
            _decode_kv(obj["kv"], data)
        elif "ids" in obj:
            _decode_ids(obj["ids"], results)
        elif "members" in obj and isinstance(obj["members"], dict):
            members = {str(k): str(v) for k, v in obj["members"].items()}
        else:
            raise SnapshotError("unknown record")
    if header is None or not ended:
        raise SnapshotError("snapshot is truncated")
    applied = header.get("applied")
    if not isinstance(applied, int) or header.get("keys") != len(data):
        raise SnapshotError("header does not match the records")
    offset = header.get("offset", 0)  # absent from snapshots made before batching
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise SnapshotError("malformed revision offset")
    raft = None
    if header.get("kind") == "dump":
        point = header.get("raft")
        if not isinstance(point, dict) or not isinstance(point.get("cluster"), list):
            raise SnapshotError("dump without its raft position")
        raft = RaftPoint(
            _entry(point.get("last")),
            _entry(point.get("prev")),
            tuple(str(address) for address in point["cluster"]),
        )
    return StateImage(applied, data, results, members, offset), raft
