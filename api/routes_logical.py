"""The catch-all ``/v1/{path}`` route: everything else goes through the core pipeline."""

from __future__ import annotations

from aiohttp import web

from api.envelope import render
from api.keys import CORE, REQUEST_ID
from api.preauth import authenticate_early
from api.translate import operation_of, to_request

__all__ = ["logical_routes"]


async def logical(request: web.Request) -> web.StreamResponse:
    request_id = request[REQUEST_ID]
    path = request.match_info["path"]
    operation = operation_of(request)
    await authenticate_early(request, path, operation)
    core_request = await to_request(request, path, request_id, operation)
    response = await request.app[CORE].handle(core_request)
    return render(response, request_id)


def logical_routes() -> list[web.RouteDef]:
    return [web.route("*", "/v1/{path:.*}", logical)]
