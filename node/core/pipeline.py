"""The request pipeline, in one place and in order.

sealed check → route to mount → help → token → authorisation (existence
check picks create or update) → backend → response.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from node.errors import PermissionDeniedError, SealedError, UnsupportedPathError
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.tokens.store import TokenEntry

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["Pipeline"]


class Pipeline:
    def __init__(self, core: Core) -> None:
        self._core = core

    async def handle(self, request: Request) -> Response:
        core = self._core
        if core.sealed:
            raise SealedError()
        route = core.router.match(request.path)
        if route is None:
            raise UnsupportedPathError(
                f"no handler for route {request.path!r}; route entry not found"
            )
        routed = replace(request, path=route.relative_path, mount_point=route.mount.path)
        backend = route.backend
        if request.operation is Operation.HELP:
            await self._authenticate(request)
            return backend.help(routed)
        if not backend.is_unauthenticated(routed.path):
            token = await self._authenticate(request)
            self._authorize(token)
        if routed.operation is Operation.UPDATE and not await backend.exists(routed):
            routed = replace(routed, operation=Operation.CREATE)
        with core.metrics.request_seconds.labels(routed.operation.value).time():
            response = await backend.handle(routed)
        return response or Response()

    async def _authenticate(self, request: Request) -> TokenEntry:
        token = await self._core.tokens.lookup(request.client_token)
        if token is None:
            raise PermissionDeniedError()
        return token

    def _authorize(self, token: TokenEntry) -> None:
        # Only root tokens exist until ACL policies land; the seam is here.
        if not token.is_root:
            raise PermissionDeniedError()
