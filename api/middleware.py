"""Middleware, in the order it wraps a request: request id → errors → metrics/log.

The error table lives here, once: core errors map by their class's
``status``; aiohttp's own HTTP errors (413, 404, 405) keep theirs; anything
else is a 500 whose details go to the log, never to the client.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web

from api.envelope import error_response
from api.keys import CORE
from node.errors import CofferError

__all__ = ["REQUEST_ID", "middlewares"]

log = logging.getLogger("coffer.http")
REQUEST_ID = web.RequestKey("request_id", str)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    request_id = str(uuid.uuid4())
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


@web.middleware
async def observe_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    response = await handler(request)
    core = request.app[CORE]
    method = request.method if request.method in _METHOD_LABELS else "OTHER"
    core.metrics.requests.labels(method, str(response.status)).inc()
    log.info(
        "request",
        extra={
            "event": "http.request",
            "method": request.method,
            "path": request.path,
            "status": response.status,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "request_id": request.get(REQUEST_ID, ""),
            "remote": request.remote,
        },
    )
    return response


middlewares = [request_id_middleware, observe_middleware, error_middleware]
