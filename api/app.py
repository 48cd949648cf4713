"""Builds the aiohttp application around a core."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from api.edge import add_fallback, at_edge
from api.expect import checked_expect, plain_expect, with_expect
from api.forwarding import FORWARDER, Forwarder
from api.keys import CORE, LIMITS
from api.listener import ListenerLimits
from api.outbound import AiohttpClient
from api.replication_net import StreamTransport
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
        app[CORE].replication.transport = StreamTransport()  # replication runs on raft only
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
    limits: ListenerLimits | None = None,
    *,
    owns_resources: bool = True,
    ui: bool = False,
) -> web.Application:
    """The app of one listener. Only one app per core (``owns_resources``) sets up
    and closes the core's outbound client and the forwarder; the apps of further
    listeners share them. ``ui`` adds the web interface (``/ui/``, ``/``)."""
    app = web.Application(client_max_size=max_request_size)  # no middleware: api/edge.py
    app[CORE] = core
    app[FORWARDER] = forwarder or Forwarder()
    app[LIMITS] = limits or ListenerLimits()
    if owns_resources:
        app.cleanup_ctx.append(_outbound_client)
        app.cleanup_ctx.append(_forwarder)
    app.add_routes(at_edge(with_expect(sys_routes(), plain_expect)))
    app.add_routes(at_edge(with_expect(logical_routes(), checked_expect)))
    if ui:
        app.add_routes(at_edge(ui_routes()))
    add_fallback(app)
    return app
