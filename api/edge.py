"""The edge around every route's handler: request id, CORS, errors, metrics, the
request log, and on a clustered node the choice of where a request is served.

It wraps each route's handler (:func:`at_edge`) instead of being an aiohttp
middleware: an app with any middleware pays aiohttp's chaining on every request
(its ``current_app`` middleware's frame and a cached chain lookup), ~1 % of a
KV read's CPU. So the app has no middleware, and the last resource
(:func:`add_fallback`) answers every request no route takes, so that a miss
is the API's JSON 404 or 405 as well.

The error table lives here, once: core errors map by their class's
``status``; aiohttp's own HTTP errors (413, 404, 405) keep theirs; anything
else is a 500 whose details go to the log, never to the client.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web
from yarl import URL

from api.cors import BrowserCors, browser_cors
from api.envelope import error_response
from api.forwarding import serve_in_cluster
from api.keys import CORE, REQUEST_ID
from api.listener import SERVER_NAME, request_finished, request_started
from api.method_tunnel import untunnelled
from sdk.errors import CofferError
from sdk.random_pool import random_uuid4

__all__ = ["add_fallback", "at_edge", "new_request_id", "serve_at_edge"]

log = logging.getLogger("coffer.http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


#: A request's id: a random version 4 UUID as text.
new_request_id = random_uuid4


def _error_response(exc: Exception, request: web.Request) -> web.Response:
    """The answer for an exception out of a handler (an HTTP exception under 400 is
    re-raised: it is aiohttp's redirect, not an error)."""
    if isinstance(exc, CofferError):
        return error_response(exc.status, exc.messages, exc.warnings)
    if isinstance(exc, web.HTTPException):
        if exc.status < 400:
            raise exc
        reason = {
            413: "request body too large",
            404: "unsupported path",
            405: "unsupported operation",
        }
        return error_response(exc.status, [reason.get(exc.status, exc.reason)])
    log.error(
        "unhandled error",
        extra={
            "event": "http.internal_error",
            "error_type": type(exc).__name__,
            "path": request.path,
        },
    )
    return error_response(500, ["internal error"])


#: Methods counted under their own name; any other token a client sends is counted as
#: OTHER, so clients cannot create an unbounded number of metric series.
_METHOD_LABELS = frozenset(
    {"GET", "HEAD", "PUT", "POST", "DELETE", "LIST", "PATCH", "OPTIONS", "HELP"}
)


_HEALTH_SUFFIX = "/sys/health"


def _observe(request: web.Request, status: int, started: float, request_id: str) -> None:
    """Counts every request; logs it at ``debug`` (a 5xx at ``warning``, except
    health probes: a sealed or uninitialised node answers every load-balancer
    check with a 5xx by design).

    As in Vault's server log, requests are not logged at the default ``info``
    level (recording each request is an audit device's job), and the line was a
    large share of a KV read's CPU; ``extra`` is only built when it is written.
    """
    method = request.method
    request.app[CORE].metrics.count_request(method if method in _METHOD_LABELS else "OTHER", status)
    level = (
        logging.WARNING
        if status >= 500 and not request.path.endswith(_HEALTH_SUFFIX)
        else logging.DEBUG
    )
    if log.isEnabledFor(level):
        log.log(
            level,
            "request",
            extra={
                "event": "http.request",
                "method": method,
                "path": request.path,
                "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                "request_id": request_id,
                "remote": request.remote,
            },
        )


async def serve_at_edge(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Everything around a request's handling, in one frame: each layer of its own
    cost every request a frame (four middlewares were ~6 % of a KV read's CPU).

    In effect, from the outside in: the client's own verb (``api/method_tunnel.py``),
    the id (set on every answer), CORS for browsers (``api/cors.py``: its
    headers on every answer, errors too), counting and logging (which see the
    error answers), the errors, and on a clustered node the choice between
    serving here and relaying to the active node (``api/forwarding.py``).
    """
    request = untunnelled(request)
    request_started(request)
    request_id = new_request_id()
    request[REQUEST_ID] = request_id
    started = time.perf_counter()
    origin = request.headers.get("Origin")
    cors: BrowserCors | None = None
    response: web.StreamResponse
    try:
        if origin:
            cors = await browser_cors(request, origin)
        if cors is not None and cors.answer is not None:
            response = cors.answer  # a refused origin, a preflight
        elif request.version.major != 1:
            # aiohttp reads an HTTP/2.0 request line as if it were 1.1; Go's server refuses it
            response = error_response(505, ["HTTP version not supported"])
            response.force_close()
        elif (cluster := request.app[CORE].cluster) is not None:
            response = await serve_in_cluster(request, handler, cluster)
        else:
            response = await handler(request)
    except Exception as exc:  # noqa: BLE001 - the process must survive any input
        response = _error_response(exc, request)
    finally:
        request_finished(request)
    if response.status >= 400 and request.can_read_body:
        response.force_close()  # a refused body (403, 408, 413) is not read to its end
    _observe(request, response.status, started, request_id)
    headers = response.headers
    headers["X-Request-Id"] = request_id
    # Here rather than in an ``on_response_prepare`` signal, which costs every
    # request a signal dispatch; the answers that bypass the edge (the
    # listener's, ``Expect`` refusals) set it themselves.
    headers["Server"] = SERVER_NAME
    if cors is not None and cors.answer is None:
        cors.decorate(response)
    return response


def _edged(handler: Handler) -> Handler:
    async def at_the_edge(request: web.Request) -> web.StreamResponse:
        return await serve_at_edge(request, handler)

    return at_the_edge


def at_edge(routes: list[web.RouteDef]) -> list[web.RouteDef]:
    """``routes`` with each handler served through :func:`serve_at_edge`."""
    return [web.RouteDef(r.method, r.path, _edged(r.handler), r.kwargs) for r in routes]


async def _unrouted(request: web.Request) -> web.StreamResponse:
    """What aiohttp's router would have answered: 405 where another route has the
    path but not the method, else 404."""
    allowed: set[str] = set()
    here = request.match_info.route.resource
    for resource in request.app.router.resources():
        if resource is not here:
            _, methods = await resource.resolve(request)
            allowed |= methods
    if allowed:
        raise web.HTTPMethodNotAllowed(request.method, allowed)
    raise web.HTTPNotFound()


class _EveryTarget(web.AbstractResource):
    """A resource that takes every request target: a path with a decoded line
    break (beyond any ``.*`` pattern) and the asterisk form (``OPTIONS *``),
    which no path pattern can match, as well. aiohttp's router tries it last
    (it is indexed under ``/``, where every target's walk ends). Built on
    aiohttp's public resource interface: one route, any method."""

    def __init__(self, handler: Handler) -> None:
        super().__init__()
        self._route = web.ResourceRoute("*", handler, self)

    async def resolve(self, request: web.Request) -> tuple[web.UrlMappingMatchInfo, set[str]]:
        return web.UrlMappingMatchInfo({}, self._route), {"*"}

    @property
    def canonical(self) -> str:
        return "/"

    def raw_match(self, path: str) -> bool:
        return False

    def url_for(self, **kwargs: str) -> URL:
        return URL("/")

    def add_prefix(self, prefix: str) -> None:
        raise NotImplementedError("the fallback resource belongs to the root app")

    def get_info(self) -> Any:  # aiohttp's own type for it is private
        return {"path": "*"}

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[web.ResourceRoute]:
        return iter((self._route,))


def add_fallback(app: web.Application) -> None:
    """Added last: a request no other route takes gets the edge's JSON 404 or 405
    (aiohttp's own answers, with no middleware to turn them into the API's, are
    plain text)."""
    app.router.register_resource(_EveryTarget(_edged(_unrouted)))
