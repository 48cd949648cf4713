"""Cross-origin headers for browser clients, as ``sys/config/cors`` sets them.

Only requests with an ``Origin`` header are looked at (the CLI and SDKs send
none, so they pay nothing). With CORS on: an origin not allowed gets 403, a
preflight ``OPTIONS`` is answered here, and every other answer to an allowed
origin carries ``Access-Control-Allow-Origin`` and ``Vary: Origin``; errors too,
so a browser can read them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from api.envelope import error_response
from api.keys import CORE
from node.core.system.cors import ALLOWED_METHODS, CorsConfig, load_cors

__all__ = ["cors_middleware"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Seconds a browser may cache a preflight answer (the reference's value).
PREFLIGHT_MAX_AGE = "300"


@web.middleware
async def cors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    origin = request.headers.get("Origin", "")
    if not origin:
        return await handler(request)
    try:
        config = await load_cors(request.app[CORE])
    except Exception:  # noqa: BLE001 - unreadable setting: answer without CORS headers
        config = CorsConfig()
    if not config.enabled:
        return await handler(request)
    if not config.allows_origin(origin):
        return error_response(403, ["origin not allowed"])
    if request.method == "OPTIONS":
        wanted = request.headers.get("Access-Control-Request-Method", "").upper()
        if wanted not in ALLOWED_METHODS:
            return error_response(405, [f"method {wanted or '(none)'} not allowed by CORS"])
        return web.Response(
            status=200,
            headers={
                "Access-Control-Allow-Origin": origin,
                "Vary": "Origin",
                "Access-Control-Allow-Methods": ",".join(ALLOWED_METHODS),
                "Access-Control-Allow-Headers": ",".join(config.allowed_headers),
                "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
            },
        )
    response = await handler(request)
    response.headers["Access-Control-Allow-Origin"] = origin
    if "Origin" not in response.headers.getall("Vary", ()):  # a forwarded answer has it
        response.headers.add("Vary", "Origin")
    return response
