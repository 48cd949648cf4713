"""The write-ahead log's framing: whatever a crash leaves at the tail (a cut anywhere,
garbage, a length running past the end), only whole records are read back."""

from __future__ import annotations

import struct
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from node.physical import wal
from sdk.physical import Delete, Put

keys = st.text(min_size=1, max_size=12).filter(lambda k: "\x00" not in k)
ops = st.lists(
    st.one_of(
        st.builds(Put, keys, st.binary(max_size=40)),
        st.builds(Delete, keys),
    ),
    max_size=4,
)
records = st.lists(st.builds(wal.Record, st.integers(0, 2**64 - 1), ops.map(tuple)), max_size=6)


def encode_all(items: list[wal.Record]) -> list[bytes]:
    return [wal.encode(r.revision, r.ops) for r in items]


@given(records)
def test_records_round_trip(items: list[wal.Record]) -> None:
    data = b"".join(encode_all(items))
    assert wal.decode(data) == (items, len(data))


@settings(max_examples=300)
@given(records, st.data())
def test_a_cut_anywhere_yields_exactly_the_whole_records_before_it(
    items: list[wal.Record], data: st.DataObject
) -> None:
    frames = encode_all(items)
    log = b"".join(frames)
    cut = data.draw(st.integers(0, len(log)))

    decoded, valid = wal.decode(log[:cut])

    ends = [sum(len(f) for f in frames[: i + 1]) for i in range(len(frames))]
    whole = sum(1 for end in ends if end <= cut)
    assert decoded == items[:whole]
    assert valid == (ends[whole - 1] if whole else 0)


@settings(max_examples=300)
@given(records, st.binary(min_size=1, max_size=64))
def test_garbage_after_the_records_is_not_read_as_one(
    items: list[wal.Record], garbage: bytes
) -> None:
    log = b"".join(encode_all(items))

    decoded, valid = wal.decode(log + garbage)

    assert decoded[: len(items)] == items
    assert valid >= len(log)
    assert valid <= len(log) + len(garbage)


@given(records, st.integers(0, 2**32 - 1))
def test_a_length_running_past_the_end_stops_reading(items: list[wal.Record], length: int) -> None:
    log = b"".join(encode_all(items))
    payload = b"x" * 10
    oversize = struct.pack(">II", max(length, len(payload) + 1), zlib.crc32(payload)) + payload

    assert wal.decode(log + oversize) == (items, len(log))


@given(records, st.data())
def test_a_flipped_byte_ends_the_log_at_its_record(
    items: list[wal.Record], data: st.DataObject
) -> None:
    frames = encode_all(items)
    log = bytearray(b"".join(frames))
    if not log:
        return
    at = data.draw(st.integers(0, len(log) - 1))
    log[at] ^= data.draw(st.integers(1, 255))

    decoded, valid = wal.decode(bytes(log))

    hit = next(i for i, end in enumerate(_ends(frames)) if at < end)
    assert decoded == items[:hit]
    assert valid == (_ends(frames)[hit - 1] if hit else 0)


def test_a_crc_valid_frame_that_does_not_parse_is_not_a_record() -> None:
    for payload in (b"", b"\x00" * 12 + b"X", struct.pack(">QI", 1, 1) + b"P\xff\xff\xff\xff"):
        frame = struct.pack(">II", len(payload), zlib.crc32(payload)) + payload
        assert wal.decode(frame) == ([], 0)


def _ends(frames: list[bytes]) -> list[int]:
    total, out = 0, []
    for frame in frames:
        total += len(frame)
        out.append(total)
    return out
