"""Property (issue 14, item 2): whatever requests a client sends on one connection and
however the bytes are split across reads, the server parses exactly those requests.

Native and extension methods (``LIST``, ``HELP``), with and without bodies,
``Content-Length`` and chunked, pipelined, cut at arbitrary byte offsets into
separate writes over a real socket to the server's own listener
(``api.listener.serve``, with the method tunnel), in front of an app that echoes
what it was given.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from api.listener import ListenerLimits, serve
from api.method_tunnel import untunnelled
from tests.request_streams import Sent, requests, split

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "LIST", "HELP", "FROB"]


@web.middleware
async def _restore_verb(request: web.Request, handler: Handler) -> web.StreamResponse:
    """What the edge does first: the verb the tunnel carried."""
    return await handler(untunnelled(request))


async def _echo(request: web.Request) -> web.Response:
    body = await request.read()
    return web.json_response(
        {
            "method": request.method,
            "path": request.raw_path,
            "seq": request.headers.get("X-Seq", ""),
            "body": body.hex(),
        }
    )


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """The echo app on the server's listener, on a loop in its own thread (hypothesis
    drives plain blocking sockets)."""
    loop = asyncio.new_event_loop()
    ready: list[int] = []
    started = threading.Event()
    stop = asyncio.Event()

    async def run() -> None:
        app = web.Application(middlewares=[_restore_verb])
        app.router.add_route("*", "/{tail:.*}", _echo)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        server = await serve(runner, "127.0.0.1", 0, ListenerLimits())
        ready.append(server.sockets[0].getsockname()[1])
        started.set()
        await stop.wait()
        server.close()
        await runner.cleanup()
        await server.wait_closed()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),))
    thread.start()
    started.wait(10)
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def _read_replies(sock: socket.socket, count: int) -> list[dict[str, str]]:
    buffer = b""
    replies = []
    while len(replies) < count:
        while b"\r\n\r\n" not in buffer:
            data = sock.recv(65536)
            assert data, f"connection closed after {len(replies)} of {count} replies"
            buffer += data
        head, _, buffer = buffer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(buffer) < length:
            data = sock.recv(65536)
            assert data, "connection closed mid-reply"
            buffer += data
        body, buffer = buffer[:length], buffer[length:]
        assert status == 200, (status, body)
        replies.append(json.loads(body))
    return replies


@settings(max_examples=150, deadline=None)
@given(
    sent=st.lists(requests(METHODS), min_size=1, max_size=4),
    cuts=st.lists(st.floats(0, 1, exclude_min=True, exclude_max=True), max_size=6),
)
def test_every_request_arrives_as_sent(port: int, sent: list[Sent], cuts: list[float]) -> None:
    stream = b"".join(request.encode(seq) for seq, request in enumerate(sent))
    pieces = split(stream, cuts)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for n, piece in enumerate(pieces):
            if n:
                time.sleep(0.003)  # so the server reads the pieces apart
            sock.sendall(piece)
        replies = _read_replies(sock, len(sent))
    assert replies == [
        {"method": r.method, "path": r.path, "seq": str(seq), "body": r.body.hex()}
        for seq, r in enumerate(sent)
    ]
