"""The method tunnel (api/method_tunnel.py) against aiohttp's real parsers.

Whatever requests a client sends on one connection, however the bytes are split
across reads: the tunnel's output, parsed by aiohttp's C parser (llhttp) and
restored by ``untunnelled``, is what aiohttp's pure-Python parser reads from the
client's own bytes; and on any bytes at all, garbage included, the tunnel only
ever rewrites request lines and drops trailer fields, loses or moves no other
byte, answers the same however the bytes are split, and never raises.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp.base_protocol import BaseProtocol
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import HttpRequestParserC, HttpRequestParserPy
from aiohttp.test_utils import make_mocked_request
from hypothesis import given, settings
from hypothesis import strategies as st

from api import method_tunnel
from api.method_tunnel import CARRIER_VERB, HEADER, MAX_HEAD, MethodTunnel, untunnelled
from tests.request_streams import Sent, requests, split

TOKEN = method_tunnel._TOKEN  # the process's token: what a tunnelled request carries

METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "LIST", "HELP", "FROB", "REPORT"]


def _through_tunnel(pieces: list[bytes]) -> bytes:
    tunnel = MethodTunnel()
    return b"".join(tunnel.feed(piece) for piece in pieces)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _parse(parser_class: Any, loop: asyncio.AbstractEventLoop, stream: bytes) -> list[tuple]:
    """Each message as (method, path, headers, body), in order."""
    parser = parser_class(BaseProtocol(loop), loop, 2**16, max_line_size=8190, max_field_size=8190)
    messages, _, _ = parser.feed_data(stream)
    parsed = []
    for message, payload in messages:
        body = payload.read_nowait(-1) if payload.is_eof() or payload.total_bytes else b""
        parsed.append((message.method, message.path, list(message.headers.items()), body))
    return parsed


def _restored(parsed: list[tuple]) -> list[tuple]:
    """What ``untunnelled`` makes of each message: the carried verb, no carrier header."""
    out = []
    for method, path, headers, body in parsed:
        carried = [v for k, v in headers if k == HEADER]
        if method == CARRIER_VERB and carried and carried[0].endswith(" " + TOKEN):
            method = carried[0].partition(" ")[0]
            headers = [(k, v) for k, v in headers if k != HEADER]
        out.append((method, path, headers, body))
    return out


@settings(max_examples=400)
@given(
    sent=st.lists(requests(METHODS), min_size=1, max_size=5),
    cuts=st.lists(st.floats(0, 1, exclude_min=True, exclude_max=True), max_size=8),
)
def test_the_c_parser_reads_through_the_tunnel_what_the_client_sent(
    loop: asyncio.AbstractEventLoop, sent: list[Sent], cuts: list[float]
) -> None:
    stream = b"".join(request.encode() for request in sent)
    tunnelled = _through_tunnel(split(stream, cuts))
    expected = _parse(HttpRequestParserPy, loop, stream)
    assert [m[0] for m in expected] == [r.method for r in sent]
    assert _restored(_parse(HttpRequestParserC, loop, tunnelled)) == expected


_CARRIED = re.compile(
    rb"%s( [^\n]*\n)%s: (\S+) %s\r\n" % (CARRIER_VERB.encode(), HEADER.encode(), TOKEN.encode())
)


def _untunnel_bytes(output: bytes) -> bytes:
    return _CARRIED.sub(rb"\2\1", output)


def _is_stream_less_trailers(out: bytes, stream: bytes) -> bool:
    """Whether ``out`` is a prefix of ``stream`` with some trailer sections cut: each
    cut starts after a ``0`` chunk-size line and runs to the section's empty line."""
    i = j = 0
    while j < len(out):
        if i < len(stream) and stream[i] == out[j]:
            i += 1
            j += 1
            continue
        if not re.search(rb"(^|\n)0(;[^\r\n]*)?\r\n$", stream[:i]):
            return False
        end = stream.find(b"\r\n\r\n", i)
        if end < 0:
            return False
        i = end + 2
    return True


_JUNK = st.one_of(
    st.binary(max_size=200),
    st.sampled_from(
        [
            b"LIST / HTTP/1.1\r\n",
            b"LIST / HTTP/1.1\n",
            b"Content-Length: 5\r\n",
            b"Content-Length: 99999999999999999999\r\n",
            b"Content-Length: -1\r\n",
            b"Transfer-Encoding: chunked\r\n",
            b"Transfer-Encoding: gzip, chunked\r\n",
            b"Upgrade: websocket\r\n",
            b"fffffffffffffffffffffff\r\n",
            b"0\r\n\r\n",
            b"\r\n",
            b"\r\n\r\n",
            b" folded\r\n",
        ]
    ),
)


@settings(max_examples=400)
@given(
    parts=st.lists(st.one_of(_JUNK, requests(METHODS).map(Sent.encode)), max_size=12),
    cuts=st.lists(st.floats(0, 1, exclude_min=True, exclude_max=True), max_size=10),
)
def test_any_bytes_come_out_whole_with_only_request_lines_rewritten(
    parts: list[bytes], cuts: list[float]
) -> None:
    stream = b"".join(parts)
    whole = MethodTunnel().feed(stream)
    assert _through_tunnel(split(stream, cuts)) == whole
    assert _is_stream_less_trailers(_untunnel_bytes(whole), stream)


def test_a_kept_alive_connection_tunnels_every_extension_verb(
    loop: asyncio.AbstractEventLoop,
) -> None:
    stream = b"".join(
        Sent(method, "/v1/secret/metadata", body, framing, (2,), True, True).encode()
        for method, body, framing in [
            ("PUT", b"LIST / HTTP/1.1\r\n", "length"),
            ("LIST", b"", "none"),
            ("POST", b"HELP / HTTP/1.1\r\n\r\n", "chunked"),
            ("HELP", b"", "none"),
            ("LIST", b"x", "length"),
        ]
    )
    parsed = _restored(_parse(HttpRequestParserC, loop, _through_tunnel([stream])))
    assert [m[0] for m in parsed] == ["PUT", "LIST", "POST", "HELP", "LIST"]
    with pytest.raises(HttpProcessingError):
        _parse(HttpRequestParserC, loop, stream)  # llhttp alone refuses LIST


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        b"GET / HTTP/1.1\nHost: a\r\n\r\n",  # a bare LF
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n 1\r\n\r\n",  # folded
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1 \r\nx\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy0\r\n\r\n",
    ],
)
def test_what_it_cannot_follow_as_llhttp_does_passes_the_connection_through(head: bytes) -> None:
    """After it, a LIST is left for llhttp to refuse: never rewritten at a guess."""
    stream = head + b"LIST /v1/x HTTP/1.1\r\nHost: a\r\n\r\n"
    assert MethodTunnel().feed(stream) == stream


def test_a_head_past_the_limit_passes_the_connection_through() -> None:
    tunnel = MethodTunnel()
    line = b"LIST /" + b"x" * MAX_HEAD
    out = b"".join(tunnel.feed(line[i : i + 4096]) for i in range(0, len(line), 4096))
    assert out == line
    assert tunnel.feed(b"LIST / HTTP/1.1\r\n") == b"LIST / HTTP/1.1\r\n"


def test_a_request_line_is_held_until_whole() -> None:
    tunnel = MethodTunnel()
    assert tunnel.feed(b"LI") == b""
    assert tunnel.feed(b"ST /v1/x HTTP/1.1") == b""
    out = tunnel.feed(b"\r\nHost: a\r\n\r\n")
    assert out == (
        b"REPORT /v1/x HTTP/1.1\r\n%s: LIST %s\r\nHost: a\r\n\r\n"
        % (HEADER.encode(), TOKEN.encode())
    )


def test_trailer_fields_never_reach_the_next_request(loop: asyncio.AbstractEventLoop) -> None:
    """aiohttp's C parser gives a request's trailers to the request after it."""
    stream = (
        b"POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"1\r\nx\r\n0\r\nX-Vault-Token: planted\r\n\r\n"
        b"GET /b HTTP/1.1\r\nHost: b\r\n\r\n"
    )
    leaked = _parse(HttpRequestParserC, loop, stream)[1][2]
    assert ("X-Vault-Token", "planted") in leaked  # why the tunnel drops them
    parsed = _parse(HttpRequestParserC, loop, MethodTunnel().feed(stream))
    assert [(m[0], m[2], m[3]) for m in parsed] == [
        ("POST", [("Host", "a"), ("Transfer-Encoding", "chunked")], b"x"),
        ("GET", [("Host", "b")], b""),
    ]


def test_native_verbs_pass_as_the_same_bytes() -> None:
    data = b"GET /v1/x HTTP/1.1\r\nHost: a\r\n\r\nPUT /v1/y HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
    assert MethodTunnel().feed(data) is data


def test_untunnelled_restores_the_verb_and_drops_the_header() -> None:
    request = make_mocked_request(
        CARRIER_VERB, "/v1/x", headers={HEADER: f"LIST {TOKEN}", "X-Vault-Token": "t"}
    )
    restored = untunnelled(request)
    assert restored.method == "LIST"
    assert HEADER not in restored.headers
    assert restored.headers["X-Vault-Token"] == "t"


@pytest.mark.parametrize(
    ("method", "value"),
    [(CARRIER_VERB, "LIST wrong-token"), (CARRIER_VERB, "LIST"), ("GET", "LIST {token}")],
)
def test_a_clients_own_carrier_header_changes_nothing(method: str, value: str) -> None:
    """Without the process's token (or on another verb) the header is the client's."""
    value = value.format(token=TOKEN)
    request = make_mocked_request(method, "/v1/x", headers={HEADER: value})
    assert untunnelled(request) is request
