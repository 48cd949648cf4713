"""The web UI: a single page at ``/ui/`` (``/`` redirects there), served from this package.

The files under ``static/`` are plain HTML, CSS and JavaScript modules: no build step,
nothing fetched from elsewhere, and the page talks only to this server's ``/v1`` API.
The set of files is read once when the routes are built, so a request can name only a
file that shipped (no path from a client ever reaches the filesystem). Navigation
inside the page is by ``#`` fragment, so the server needs no fallback route.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from aiohttp import web

__all__ = ["STATIC_DIR", "ui_routes"]

STATIC_DIR = Path(__file__).resolve().parent / "static"

#: The page may load only its own files and call only its own origin; no framing
#: (clickjacking), no sniffing, and no referrer leaking a path to other sites.
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
    ".html": "text/html",
    ".svg": "image/svg+xml",
}


def _files(root: Path) -> dict[str, tuple[bytes, str]]:
    """Every shipped file by its path under ``/ui/``, with its content type."""
    found: dict[str, tuple[bytes, str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            kind = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
            found[path.relative_to(root).as_posix()] = (
                path.read_bytes(),
                kind or "application/octet-stream",
            )
    return found


def ui_routes(root: Path = STATIC_DIR) -> list[web.RouteDef]:
    """``GET /`` and ``/ui`` redirect to ``/ui/``; ``/ui/`` is the page; ``/ui/<file>``
    its assets. Anything else under ``/ui/`` is a 404 in the API's JSON error form."""
    files = _files(root)

    async def redirect(request: web.Request) -> web.Response:
        return web.Response(status=307, headers={"Location": "/ui/", "Cache-Control": "no-store"})

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info.get("name") or "index.html"
        entry = files.get(name)
        if entry is None:
            raise web.HTTPNotFound()
        body, kind = entry
        charset = "utf-8" if kind.startswith("text/") or kind.endswith("+xml") else None
        return web.Response(body=body, content_type=kind, charset=charset, headers=_HEADERS)

    return [
        web.get("/", redirect, allow_head=True),
        web.get("/ui", redirect, allow_head=True),
        web.get("/ui/", asset, allow_head=True),
        web.get("/ui/{name:.+}", asset, allow_head=True),
    ]
