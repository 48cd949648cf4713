"""Cross-origin headers for browser clients, as ``sys/config/cors`` sets them.

Only requests with an ``Origin`` header are looked at (the CLI and SDKs send
none, so they pay nothing). With CORS on: an origin not allowed gets 403, a
preflight ``OPTIONS`` is answered here, and every other answer to an allowed
origin carries ``Access-Control-Allow-Origin`` and ``Vary: Origin``; errors too,
so a browser can read them.

The edge (``api/edge.py``) asks :func:`browser_cors` about a request with an
``Origin`` first and decorates what it answers last: a CORS middleware of its
own cost every request, browser or not, a layer of aiohttp's chaining.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from api.envelope import error_response
from api.keys import CORE
from node.core.system.cors import ALLOWED_METHODS, CorsConfig, load_cors

__all__ = ["BrowserCors", "browser_cors"]

#: Seconds a browser may cache a preflight answer (the reference's value).
PREFLIGHT_MAX_AGE = "300"


@dataclass(frozen=True, slots=True)
class BrowserCors:
    """What CORS makes of one browser request: an ``answer`` of its own (a
    refused origin, a preflight), or None to serve it and :meth:`decorate` the answer."""

    origin: str
    answer: web.StreamResponse | None = None

    def decorate(self, response: web.StreamResponse) -> None:
        response.headers["Access-Control-Allow-Origin"] = self.origin
        if "Origin" not in response.headers.getall("Vary", ()):  # a forwarded answer has it
            response.headers.add("Vary", "Origin")


async def browser_cors(request: web.Request, origin: str) -> BrowserCors | None:
    """For a request with an ``Origin`` header; None when CORS is off."""
    try:
        config = await load_cors(request.app[CORE])
    except Exception:  # noqa: BLE001 - unreadable setting: answer without CORS headers
        config = CorsConfig()
    if not config.enabled:
        return None
    if not config.allows_origin(origin):
        return BrowserCors(origin, error_response(403, ["origin not allowed"]))
    if request.method == "OPTIONS":
        return BrowserCors(origin, _preflight(request, origin, config))
    return BrowserCors(origin)


def _preflight(request: web.Request, origin: str, config: CorsConfig) -> web.Response:
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
