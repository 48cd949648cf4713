"""api.outbound.AiohttpClient against a local aiohttp server, and the emulator's TOTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from api.outbound import AiohttpClient
from node.outbound import HttpClient, OutboundError
from tests.support.idp_emulator import totp_code


async def _echo(request: web.Request) -> web.Response:
    return web.json_response(
        {"method": request.method, "json": await request.json(), "ct": request.content_type}
    )


async def _links(request: web.Request) -> web.Response:
    response = web.Response(text="[]")
    response.headers.add("Link", '<a>; rel="self"')
    response.headers.add("Link", '<b>; rel="next"')
    return response


async def _redirect(request: web.Request) -> web.Response:
    raise web.HTTPFound("https://evil.example/")


async def _big(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()  # chunked: no Content-Length to check up front
    await response.prepare(request)
    for _ in range(40):
        await response.write(b"x" * 1024)
    await response.write_eof()
    return response


async def _slow(request: web.Request) -> web.Response:
    await asyncio.sleep(2)
    return web.Response(text="late")


@pytest.fixture
async def server() -> AsyncIterator[TestServer]:
    app = web.Application()
    app.router.add_post("/echo", _echo)
    app.router.add_get("/links", _links)
    app.router.add_get("/redirect", _redirect)
    app.router.add_get("/big", _big)
    app.router.add_get("/slow", _slow)
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    try:
        yield test_server
    finally:
        await test_server.close()


@pytest.fixture
async def client() -> AsyncIterator[AiohttpClient]:
    http = AiohttpClient(max_body=32 * 1024)
    try:
        yield http
    finally:
        await http.close()


async def test_json_bodies_and_joined_headers(server: TestServer, client: AiohttpClient) -> None:
    assert isinstance(client, HttpClient)
    reply = await client.request("POST", str(server.make_url("/echo")), json={"a": 1})
    assert reply.status == 200
    assert b'"json": {"a": 1}' in reply.body
    assert b'"ct": "application/json"' in reply.body
    links = await client.request("GET", str(server.make_url("/links")))
    assert links.header("Link") == '<a>; rel="self", <b>; rel="next"'


async def test_redirects_are_returned_not_followed(
    server: TestServer, client: AiohttpClient
) -> None:
    reply = await client.request("GET", str(server.make_url("/redirect")))
    assert reply.status == 302
    assert reply.header("location") == "https://evil.example/"


async def test_bodies_are_capped(server: TestServer, client: AiohttpClient) -> None:
    with pytest.raises(OutboundError, match="exceeds"):
        await client.request("GET", str(server.make_url("/big")))


async def test_timeouts(server: TestServer) -> None:
    capped = AiohttpClient(max_timeout=0.2)
    try:
        with pytest.raises(OutboundError, match=r"within 0\.2 seconds"):
            await capped.request("GET", str(server.make_url("/slow")), timeout=5)
    finally:
        await capped.close()


async def test_connection_failures(client: AiohttpClient) -> None:
    with pytest.raises(OutboundError):
        await client.request("GET", "http://127.0.0.1:1/")
    with pytest.raises(OutboundError):
        await client.request("GET", "not a url")


def test_totp_matches_rfc_6238() -> None:
    secret = b"12345678901234567890"
    # RFC 6238 appendix B (SHA-1), last six digits of the eight-digit values.
    assert totp_code(secret, 59) == "287082"
    assert totp_code(secret, 1111111109) == "081804"
    assert totp_code(secret, 1234567890, digits=8) == "89005924"
