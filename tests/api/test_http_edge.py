"""The HTTP layer as ``coffer server`` serves it: what aiohttp itself answers is the
API's JSON, the ``Server`` header names no library, slow clients are cut off, the
connection count is capped, and ``LIST`` survives a kept-alive connection.

Raw sockets, so the bytes and how they are split across reads are the test's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from api.app import create_app
from api.listener import ListenerLimits
from node.core.core import Core
from node.physical.inmem import InmemBackend
from tests.api.edge_serving import connection, read_reply, request, send, serving


@dataclass
class Edge:
    port: int
    token: str


async def _edge(limits: ListenerLimits) -> AsyncIterator[Edge]:
    core = Core(InmemBackend())
    init = await core.dev_bootstrap()
    async with serving(create_app(core, 1024 * 1024, limits=limits), limits) as port:
        yield Edge(port, init.root_token)


@pytest.fixture
async def edge() -> AsyncIterator[Edge]:
    async for served in _edge(ListenerLimits()):
        yield served


#: Short enough for a test to wait them out; the assertions are on what is answered.
SHORT = ListenerLimits(
    read_header_timeout=0.3, read_timeout=0.3, idle_timeout=0.6, max_connections=3
)


@pytest.fixture
async def short() -> AsyncIterator[Edge]:
    async for served in _edge(SHORT):
        yield served


# -- item 2: LIST on a kept-alive connection ------------------------------------------


async def test_list_after_a_body_sent_in_its_own_read(edge: Edge) -> None:
    """requests, urllib3 and hvac write headers and body apart; the LIST after it is a LIST."""
    body = json.dumps({"policy": 'path "x" { capabilities = ["read"] }'}).encode()
    put = request("PUT", "/v1/sys/policies/acl/p", edge.token, body)
    async with connection(edge.port) as (reader, writer):
        for _ in range(3):
            await send(writer, put[: -len(body)], put[-len(body) :])
            assert (await read_reply(reader)).status == 204
            await send(writer, request("LIST", "/v1/sys/policies/acl", edge.token))
            listed = await read_reply(reader)
            assert listed.status == 200, listed
            assert "p" in listed.json["data"]["keys"]


# -- item 2 and 7: what the HTTP layer answers itself ----------------------------------

LONG = "x" * 9000

#: Requests aiohttp's parser refuses before any handler runs, with the status the
#: client must get (Vault's Go server uses 431 and 505 for these cases).
MALFORMED: dict[str, tuple[bytes, int]] = {
    "garbage request line": (b"HELLO\r\n\r\n", 400),
    "no target": (b"GET HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "bad method character": (b"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "bad version": (b"GET / HTTP/1.x\r\nHost: x\r\n\r\n", 400),
    "version 2": (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    "version 3": (b"GET / HTTP/3.1\r\nHost: x\r\n\r\n", 505),
    "TLS handshake on plain HTTP": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
    "header without colon": (b"GET / HTTP/1.1\r\nHost x\r\n\r\n", 400),
    "space before colon": (b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    "NUL in a header": (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400),
    "obsolete line folding": (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400),
    "bad content-length": (b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
    "negative content-length": (b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
    "two content-lengths": (
        b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        400,
    ),
    "content-length and chunked": (
        b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    "unknown transfer-encoding": (
        b"PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        400,
    ),
    "request line too long": (f"GET /{LONG} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), 431),
    "header too long": (f"GET / HTTP/1.1\r\nHost: x\r\nX-A: {LONG}\r\n\r\n".encode(), 431),
    "too many headers": (
        b"GET / HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-%d: 1\r\n" % n for n in range(200))
        + b"\r\n",
        431,
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
async def test_what_the_parser_refuses_is_answered_as_json(edge: Edge, name: str) -> None:
    raw, status = MALFORMED[name]
    async with connection(edge.port) as (reader, writer):
        await send(writer, raw)
        reply = await read_reply(reader)
    assert reply.status == status, reply
    assert reply.headers["content-type"].startswith("application/json"), reply
    errors = reply.json["errors"]
    assert errors and all(isinstance(e, str) and e for e in errors), reply
    assert "aiohttp" not in reply.headers.get("server", "").lower()


@pytest.mark.parametrize(
    "chunked",
    [b"zz\r\nab\r\n0\r\n\r\n", b"3\r\nabcd\r\n0\r\n\r\n", b"3;\x00=1\r\nabc\r\n0\r\n\r\n"],
    ids=["bad size", "chunk longer than said", "bad extension"],
)
async def test_bad_chunking_is_a_json_400(edge: Edge, chunked: bytes) -> None:
    head = (
        f"PUT /v1/secret/data/a HTTP/1.1\r\nHost: x\r\nX-Vault-Token: {edge.token}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    async with connection(edge.port) as (reader, writer):
        await send(writer, head + chunked)
        reply = await read_reply(reader)
    assert reply.status == 400, reply
    assert reply.json["errors"], reply


async def test_server_header_names_no_library(edge: Edge) -> None:
    async with connection(edge.port) as (reader, writer):
        await send(writer, request("GET", "/v1/sys/health"))
        reply = await read_reply(reader)
    assert reply.status == 200
    assert reply.headers["server"] == "Coffer"


# -- item 5: slow clients --------------------------------------------------------------


async def _closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the connection (a bounded wait, not a timing claim)."""
    try:
        await asyncio.wait_for(reader.read(), timeout=10)
    except TimeoutError:
        return False
    return True


async def test_a_header_section_never_finished_is_cut_off(short: Edge) -> None:
    async with connection(short.port) as (reader, writer):
        await send(writer, b"GET /v1/sys/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        reply = await read_reply(reader)
        assert reply.status == 408
        assert reply.json["errors"] == ["timed out reading the request header"]
        assert await _closed(reader)


async def test_a_kept_alive_connections_next_header_section_is_cut_off(short: Edge) -> None:
    """The deadline runs from the next request's first byte, whatever timer the
    connection's first request left pending."""
    async with connection(short.port) as (reader, writer):
        await send(writer, request("GET", "/v1/sys/health"))
        assert (await read_reply(reader)).status == 200
        await asyncio.sleep(0.2)  # the timer armed at the accept fires mid-header
        await send(writer, b"GET /v1/sys/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        reply = await read_reply(reader)
        assert reply.status == 408
        assert reply.json["errors"] == ["timed out reading the request header"]


async def test_requests_on_a_kept_alive_connection_do_not_ask_asyncio_for_the_loop(
    edge: Edge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header timer is re-armed for every request on the connection's own loop:
    on CPython 3.11 ``asyncio.get_running_loop()`` makes a ``getpid()`` system call
    (its fork check), a measured share of a KV read (docs/performance.md)."""
    asked_from: list[str] = []
    real = asyncio.get_running_loop

    def counted() -> asyncio.AbstractEventLoop:
        asked_from.append(sys._getframe(1).f_code.co_filename)
        return real()

    monkeypatch.setattr(asyncio, "get_running_loop", counted)
    async with connection(edge.port) as (reader, writer):
        for _ in range(3):
            await send(writer, request("GET", "/v1/sys/health"))
            assert (await read_reply(reader)).status == 200
    assert asked_from, "the patch is in force (the test client asks too)"
    assert [f for f in asked_from if f.endswith("api/listener.py")] == []


async def test_a_body_that_does_not_decode_is_a_json_400(edge: Edge) -> None:
    raw = request("PUT", "/v1/secret/data/a", edge.token, b"abcde", **{"Content-Encoding": "gzip"})
    async with connection(edge.port) as (reader, writer):
        await send(writer, raw)
        reply = await read_reply(reader)
    assert reply.status == 400, reply
    assert reply.json["errors"][0].startswith("failed to read the request body")


async def test_a_connection_that_sends_nothing_is_closed(short: Edge) -> None:
    async with connection(short.port) as (reader, _writer):
        assert await _closed(reader)


async def test_an_idle_kept_alive_connection_is_closed(short: Edge) -> None:
    async with connection(short.port) as (reader, writer):
        await send(writer, request("GET", "/v1/sys/health"))
        assert (await read_reply(reader)).status == 200
        assert await _closed(reader)


async def test_a_body_never_finished_is_cut_off(short: Edge) -> None:
    head = request("PUT", "/v1/secret/data/a", short.token, b'{"data": {"a": 1}}')
    async with connection(short.port) as (reader, writer):
        await send(writer, head[:-5])
        reply = await read_reply(reader)
        assert reply.status == 408, reply
        assert reply.json["errors"] == ["timed out reading the request body"]
        assert await _closed(reader)


async def test_connections_over_the_cap_are_refused(short: Edge) -> None:
    held = [await asyncio.open_connection("127.0.0.1", short.port) for _ in range(3)]
    try:
        await asyncio.sleep(0.05)
        async with connection(short.port) as (reader, writer):
            await send(writer, request("GET", "/v1/sys/health"))
            reply = await read_reply(reader)
        assert reply.status == 503
        assert reply.json["errors"] == ["too many connections"]
    finally:
        for _, writer in held:
            writer.close()
    await asyncio.sleep(0.05)
    async with connection(short.port) as (reader, writer):
        await send(writer, request("GET", "/v1/sys/health"))
        assert (await read_reply(reader)).status == 200


# -- Expect ------------------------------------------------------------------------------


async def test_an_unknown_expectation_is_a_json_417(edge: Edge) -> None:
    raw = request("PUT", "/v1/secret/data/a", edge.token, b"{}", Expect="bogus")
    async with connection(edge.port) as (reader, writer):
        await send(writer, raw)
        reply = await read_reply(reader)
    assert reply.status == 417, reply
    assert reply.json["errors"] == ["unsupported Expect header 'bogus'"]
    assert reply.headers["server"] == "Coffer"  # answered before the edge runs


async def test_continue_is_sent_only_to_a_token_holder(edge: Edge) -> None:
    body = json.dumps({"data": {"v": 1}}).encode()
    for token, status in (("", 403), (edge.token, 200)):
        raw = request("PUT", "/v1/secret/data/e", token, body, Expect="100-continue")
        async with connection(edge.port) as (reader, writer):
            await send(writer, raw[: -len(body)])
            first = await read_reply(reader)
            if status == 403:
                assert first.status == 403, first
                assert first.json["errors"] == ["permission denied"]
                assert first.headers["server"] == "Coffer"
                continue
            assert first.status == 100
            await send(writer, body)
            assert (await read_reply(reader)).status == status
