"""Builds the aiohttp application around a core."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from api.forwarding import FORWARDER, Forwarder, forwarding_middleware
from api.keys import CORE
from api.middleware import middlewares
from api.outbound import AiohttpClient
from api.parser import use_extension_method_parser
from api.routes_logical import logical_routes
from api.routes_sys import sys_routes
from api.ui import ui_routes
from node.core.core import Core

__all__ = ["create_app"]

DEFAULT_MAX_REQUEST_SIZE = 32 * 1024 * 1024


async def _outbound_client(app: web.Application) -> AsyncIterator[None]:
    """Give the core its outgoing HTTP client (auth methods calling providers) for the
    app's lifetime; the core itself never imports aiohttp."""
    core = app[CORE]
    if getattr(core, "http_client", None) is not None:
        yield  # set by the caller (tests with their own client)
        return
    client = AiohttpClient()
    core.http_client = client
    try:
        yield
    finally:
        core.http_client = None
        await client.close()


async def _forwarder(app: web.Application) -> AsyncIterator[None]:
    """Peers' APIs (forwarding, join, membership) share one client for the app's life."""
    forwarder = app[FORWARDER]
    cluster = app[CORE].cluster
    if cluster is not None:
        cluster.http = forwarder
    try:
        yield
    finally:
        if cluster is not None:
            cluster.http = None
            await cluster.close()
        await forwarder.close()


def create_app(
    core: Core,
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
    forwarder: Forwarder | None = None,
    ui: bool = False,
) -> web.Application:
    """The HTTP API around ``core``; ``ui`` adds the web interface (``/ui/``, ``/``)."""
    use_extension_method_parser()
    app = web.Application(
        client_max_size=max_request_size, middlewares=[*middlewares, forwarding_middleware]
    )
    app[CORE] = core
    app[FORWARDER] = forwarder or Forwarder()
    app.cleanup_ctx.append(_outbound_client)
    app.cleanup_ctx.append(_forwarder)
    app.add_routes(sys_routes())
    app.add_routes(logical_routes())
    if ui:
        app.add_routes(ui_routes())
    return app
