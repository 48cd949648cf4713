"""The catch-all ``/v1/{path}`` route: everything else goes through the core pipeline."""

from __future__ import annotations

from aiohttp import web

from api.envelope import render
from api.keys import CORE
from api.middleware import REQUEST_ID
from api.translate import to_request

__all__ = ["logical_routes"]


async def logical(request: web.Request) -> web.StreamResponse:
    request_id = request[REQUEST_ID]
    core_request = await to_request(request, request.match_info["path"], request_id)
    response = await request.app[CORE].handle(core_request)
    return render(response, request_id)


def logical_routes() -> list[web.RouteDef]:
    return [web.route("*", "/v1/{path:.*}", logical)]
