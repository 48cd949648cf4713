"""Builds the aiohttp application around a core."""

from __future__ import annotations

from aiohttp import web

from api.keys import CORE
from api.middleware import middlewares
from api.parser import use_extension_method_parser
from api.routes_logical import logical_routes
from api.routes_sys import sys_routes
from node.core.core import Core

__all__ = ["create_app"]

DEFAULT_MAX_REQUEST_SIZE = 32 * 1024 * 1024


def create_app(core: Core, max_request_size: int = DEFAULT_MAX_REQUEST_SIZE) -> web.Application:
    use_extension_method_parser()
    app = web.Application(client_max_size=max_request_size, middlewares=middlewares)
    app[CORE] = core
    app.add_routes(sys_routes())
    app.add_routes(logical_routes())
    return app
