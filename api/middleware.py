"""Middleware, in the order it wraps a request: request id → errors → metrics/log.

The error table lives here, once: core errors map by their class's
``status``; aiohttp's own HTTP errors (413, 404, 405) keep theirs; anything
else is a 500 whose details go to the log, never to the client.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from api.envelope import error_response
from api.keys import CORE
from node.errors import CofferError

__all__ = ["REQUEST_ID", "middlewares", "new_request_id"]

log = logging.getLogger("coffer.http")
REQUEST_ID = web.RequestKey("request_id", str)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_request_id() -> str:
    """A random (version 4) UUID as text, as ``str(uuid.uuid4())`` gives, at a third of
    the cost: no ``UUID`` object in between."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@web.middleware
async def request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    request_id = new_request_id()
    request[REQUEST_ID] = request_id
    response = await handler(request)
    response.headers["X-Request-Id"] = request_id
    return response


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except CofferError as exc:
        return error_response(exc.status, exc.messages, exc.warnings)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        reason = {
            413: "request body too large",
            404: "unsupported path",
            405: "unsupported operation",
        }
        return error_response(exc.status, [reason.get(exc.status, exc.reason)])
    except Exception as exc:  # noqa: BLE001 - the process must survive any input
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


@web.middleware
async def observe_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Counts every request; logs it at ``debug`` (a 5xx at ``warning``, except
    health probes: a sealed or uninitialised node answers every load-balancer
    check with a 5xx by design).

    As in Vault's server log, requests are not logged at the default ``info``
    level (recording each request is an audit device's job), and the line was a
    large share of a KV read's CPU; ``extra`` is only built when it is written.
    """
    started = time.perf_counter()
    response = await handler(request)
    status = response.status
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
                "request_id": request.get(REQUEST_ID, ""),
                "remote": request.remote,
            },
        )
    return response


middlewares = [request_id_middleware, observe_middleware, error_middleware]
