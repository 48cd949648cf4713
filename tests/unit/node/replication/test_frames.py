"""The stream's frame parser, fed hostile and randomly split input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.replication.frames import FrameDecoder, FrameError, b64, encode, unb64

_messages = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["wals", "heartbeat", "ack", "sync"]),
            "index": st.integers(0, 2**53),
            "ops": st.lists(st.tuples(st.text(max_size=20), st.none() | st.text(max_size=40))),
        }
    ),
    max_size=8,
)


@given(_messages, st.lists(st.integers(1, 64), max_size=50))
@settings(max_examples=200, deadline=None)
def test_any_split_of_a_stream_gives_back_the_same_messages(messages, cuts) -> None:  # type: ignore[no-untyped-def]
    stream = b"".join(encode(m) for m in messages)
    decoder = FrameDecoder()
    out = []
    position = 0
    for cut in cuts:
        out += decoder.feed(stream[position : position + cut])
        position += cut
    out += decoder.feed(stream[position:])
    assert out == [dict(m, ops=[list(op) for op in m["ops"]]) for m in messages]
    assert decoder.pending == 0


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_garbage_is_either_incomplete_or_a_frame_error(data: bytes) -> None:
    decoder = FrameDecoder(max_frame=1024)
    try:
        for message in decoder.feed(data):
            assert isinstance(message, dict) and isinstance(message["type"], str)
    except FrameError:
        pass


@given(st.integers(1025, 2**32 - 1))
def test_an_oversize_length_is_refused_before_its_body_is_buffered(length: int) -> None:
    decoder = FrameDecoder(max_frame=1024)
    with pytest.raises(FrameError, match="over the"):
        decoder.feed(struct.pack(">I", length))  # the header alone is enough to refuse


@given(_messages.filter(bool))
def test_a_truncated_stream_yields_only_whole_messages(messages) -> None:  # type: ignore[no-untyped-def]
    stream = b"".join(encode(m) for m in messages)
    decoder = FrameDecoder()
    got = decoder.feed(stream[:-1])
    assert len(got) == len(messages) - 1


@pytest.mark.parametrize("body", [b"[]", b'{"no":"type"}', b'{"type":1}', b"\xff\xfe", b"nul"])
def test_frames_that_are_not_typed_objects_end_the_connection(body: bytes) -> None:
    with pytest.raises(FrameError):
        FrameDecoder().feed(struct.pack(">I", len(body)) + body)


def test_base64_values_are_strict() -> None:
    assert unb64(b64(b"\x00\x01")) == b"\x00\x01"
    for bad in ("not base64!", 3, None):
        with pytest.raises(FrameError):
            unb64(bad)
