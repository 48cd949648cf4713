"""The file backend's write-ahead log: one framed record per committed transaction.

Frame: 4-byte big-endian payload length, 4-byte CRC-32 of the payload, payload.
Payload: 8-byte revision, 4-byte op count, then per op a kind byte (``P``ut or
``D``elete), a 4-byte key length and the UTF-8 key, and for a put a 4-byte value
length and the value. A crash can leave a torn last frame (short, or with a CRC
that does not match); :func:`decode` stops at the first frame that is not whole
and says where, so the log is cut back there on open. Only records whose fsync
completed were ever acknowledged, and those lie before any torn frame.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from sdk.physical import Delete, Put

__all__ = ["Record", "decode", "encode"]

_FRAME = struct.Struct(">II")
_HEAD = struct.Struct(">QI")
_LEN = struct.Struct(">I")
_PUT, _DELETE = b"P", b"D"


@dataclass(frozen=True, slots=True)
class Record:
    """The writes of one transaction and the revision they were given."""

    revision: int
    ops: tuple[Put | Delete, ...]


def encode(revision: int, ops: Sequence[Put | Delete]) -> bytes:
    """One frame holding ``ops`` at ``revision``."""
    parts = [_HEAD.pack(revision, len(ops))]
    for op in ops:
        key = op.key.encode()
        if isinstance(op, Put):
            parts += [_PUT, _LEN.pack(len(key)), key, _LEN.pack(len(op.value)), op.value]
        else:
            parts += [_DELETE, _LEN.pack(len(key)), key]
    payload = b"".join(parts)
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def decode(data: bytes) -> tuple[list[Record], int]:
    """The whole records at the start of ``data`` and the length they span.

    Everything after that length (a torn frame, garbage) is not a record.
    """
    records: list[Record] = []
    offset = 0
    while len(data) - offset >= _FRAME.size:
        length, crc = _FRAME.unpack_from(data, offset)
        start = offset + _FRAME.size
        if length > len(data) - start:
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            break
        record = _decode_payload(payload)
        if record is None:
            break
        records.append(record)
        offset = start + length
    return records, offset


def _decode_payload(payload: bytes) -> Record | None:
    """The record in a frame whose CRC matched, or None if it does not parse whole."""
    try:
        revision, count = _HEAD.unpack_from(payload, 0)
        offset = _HEAD.size
        ops: list[Put | Delete] = []
        for _ in range(count):
            kind = payload[offset : offset + 1]
            key, offset = _field(payload, offset + 1)
            if kind == _PUT:
                value, offset = _field(payload, offset)
                ops.append(Put(key.decode(), value))
            elif kind == _DELETE:
                ops.append(Delete(key.decode()))
            else:
                return None
    except (struct.error, UnicodeDecodeError, ValueError):
        return None
    if offset != len(payload):
        return None
    return Record(revision, tuple(ops))


def _field(payload: bytes, offset: int) -> tuple[bytes, int]:
    (length,) = _LEN.unpack_from(payload, offset)
    start = offset + _LEN.size
    if length > len(payload) - start:
        raise ValueError("field runs past the record")
    return payload[start : start + length], start + length
