"""The stream's frame parser, fed hostile and randomly split input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from node.logical.response import Login
from node.replication.forwarding import (
    ForwardedError,
    dynamic_filter_from,
    login_link_from,
    login_link_to,
)
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


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "type",
                "status",
                "errors",
                "dynamic_filtered_mounts",
                "dynamic_filtered_namespaces",
            ]
        ),
        _JSON | st.sampled_from(["dynamic-filter", "forwarded"]),
        max_size=5,
    )
)
@settings(max_examples=300, deadline=None)
def test_a_dynamic_filter_answer_is_either_well_formed_or_refused(raw: dict[str, object]) -> None:
    """The secondary's question to the primary: any answer is two string lists, the
    primary's refusal (an HTTP error status), or a FrameError; never anything else."""
    try:
        parsed = dynamic_filter_from(raw)
    except ForwardedError as refused:
        assert 400 <= refused.status < 600
        return
    except FrameError:
        return
    assert set(parsed) == {"dynamic_filtered_mounts", "dynamic_filtered_namespaces"}
    assert all(isinstance(v, str) for values in parsed.values() for v in values)


def test_a_dynamic_filter_answer_reads_back() -> None:
    raw = {
        "type": "dynamic-filter",
        "dynamic_filtered_mounts": ["team/"],
        "dynamic_filtered_namespaces": [],
    }
    assert dynamic_filter_from(raw) == {
        "dynamic_filtered_mounts": ["team/"],
        "dynamic_filtered_namespaces": [],
    }
    with pytest.raises(ForwardedError) as refused:
        dynamic_filter_from({"type": "forwarded", "status": 400, "errors": ["no secondary"]})
    assert refused.value.status == 400


@given(
    st.dictionaries(
        st.sampled_from(
            ["namespace_id", "mount_accessor", "alias_name", "alias_metadata", "group_aliases"]
        ),
        _JSON,
        max_size=5,
    )
    | _JSON
)
@settings(max_examples=300, deadline=None)
def test_an_identity_link_question_is_either_well_formed_or_a_frame_error(raw: object) -> None:
    """What a secondary sends to have its login linked: the primary reads it into
    strings (a non-empty alias and accessor) or refuses it, never anything else."""
    try:
        namespace_id, accessor, login = login_link_from(raw)
    except FrameError:
        return
    assert isinstance(namespace_id, str) and accessor and login.alias_name
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in login.alias_metadata.items())
    assert all(isinstance(g, str) for g in login.group_aliases)


@given(
    st.text(max_size=10),
    st.text(min_size=1, max_size=10),
    st.text(min_size=1, max_size=10),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    st.lists(st.text(max_size=5), max_size=3),
)
def test_an_identity_link_question_reads_back(
    namespace_id: str, accessor: str, alias: str, metadata: dict[str, str], groups: list[str]
) -> None:
    login = Login(alias, ["p"], None, alias_metadata=metadata, group_aliases=groups)
    ns, acc, back = login_link_from(login_link_to(namespace_id, accessor, login))
    assert (ns, acc) == (namespace_id, accessor)
    assert (back.alias_name, back.alias_metadata, back.group_aliases) == (alias, metadata, groups)
    assert back.policies == []  # the secondary keeps its policies and token settings
