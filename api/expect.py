"""``Expect`` headers: ``100-continue`` is answered only for a request the server will
read the body of, and anything else is the API's JSON 417 (aiohttp's own answer
is plain text and sends ``100 Continue`` before any check)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.http import HttpVersion11

from api.envelope import error_response
from api.keys import CORE
from api.listener import SERVER_NAME
from api.method_tunnel import untunnelled
from api.preauth import authenticate_early
from api.translate import operation_of
from sdk.errors import CofferError

__all__ = ["checked_expect", "plain_expect", "with_expect"]

ExpectHandler = Callable[[web.Request], Awaitable[web.StreamResponse | None]]


def _refusal(status: int, messages: list[str]) -> web.Response:
    """An answer before the edge runs: it names the server itself and closes
    the connection (the body the client may still send is not read)."""
    response = error_response(status, messages)
    response.headers["Server"] = SERVER_NAME
    response.force_close()
    return response


async def _continue(request: web.Request) -> web.StreamResponse | None:
    expect = request.headers.get("Expect", "")
    if request.version != HttpVersion11:
        return None
    if expect.lower() != "100-continue":
        return _refusal(417, [f"unsupported Expect header {expect[:64]!r}"])
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    return None


async def plain_expect(request: web.Request) -> web.StreamResponse | None:
    """For the sealed-safe endpoints: they take unauthenticated bodies (small ones)."""
    return await _continue(request)


async def checked_expect(request: web.Request) -> web.StreamResponse | None:
    """For ``/v1/{path}``: the client token is checked before the client is told to
    send its body, so a refused client never sends it (curl asks first for any
    body over 1 KiB). It runs before the edge, so it restores the verb itself."""
    request = untunnelled(request)
    if (
        request.version == HttpVersion11
        and request.headers.get("Expect", "").lower() == "100-continue"
        and await _serves_here(request)
    ):
        try:
            await authenticate_early(request, request.match_info["path"], operation_of(request))
        except CofferError as exc:
            return _refusal(exc.status, exc.messages)
    return await _continue(request)


async def _serves_here(request: web.Request) -> bool:
    """Whether this node answers itself: a standby relays the request (and its token
    may be newer than the standby's replica), so the active node checks it."""
    cluster = request.app[CORE].cluster
    return cluster is None or (await cluster.state()).active


def with_expect(routes: list[web.RouteDef], handler: ExpectHandler) -> list[web.RouteDef]:
    """``routes`` with ``handler`` as their ``Expect`` handler (aiohttp's route option)."""
    return [
        web.RouteDef(r.method, r.path, r.handler, {**r.kwargs, "expect_handler": handler})
        for r in routes
    ]
