"""``sys/wrapping/{wrap,unwrap,lookup,rewrap}``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["WrappingPaths"]


_TOKEN = {"token": Field(FieldType.STRING, "The wrapping token.")}


class WrappingPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        return [
            Path(
                "wrapping/wrap",
                {Operation.UPDATE: self._wrap},
                {},
                "Wrap the request body.",
                free_form=True,
            ),
            Path(
                "wrapping/unwrap",
                {Operation.UPDATE: self._unwrap},
                _TOKEN,
                "Unwrap a wrapped response.",
            ),
            Path(
                "wrapping/lookup",
                {Operation.UPDATE: self._lookup, Operation.READ: self._lookup},
                _TOKEN,
                "Properties of a wrapping token.",
                unauthenticated=True,
            ),
            Path(
                "wrapping/rewrap",
                {Operation.UPDATE: self._rewrap},
                _TOKEN,
                "Re-wrap under a new token.",
            ),
        ]

    async def _wrap(self, request: Request, data: FieldData) -> Response:
        if not request.wrap_ttl:
            raise InvalidRequestError("endpoint requires response wrapping to be used")
        if not request.data:
            raise InvalidRequestError("empty wrapping data")
        return Response(data=dict(request.data))

    async def _unwrap(self, request: Request, data: FieldData) -> Response:
        token = _wrapping_token(request, data)
        return await self._core.wrapping.unwrap(token, token == request.client_token)

    async def _lookup(self, request: Request, data: FieldData) -> Response:
        token = _wrapping_token(request, data)
        info = await self._core.wrapping.lookup(token, token == request.client_token)
        return Response(data=info)

    async def _rewrap(self, request: Request, data: FieldData) -> Response:
        token = _wrapping_token(request, data)
        return await self._core.wrapping.rewrap(token, token == request.client_token)


def _wrapping_token(request: Request, data: FieldData) -> str:
    """The ``token`` field, else the calling token (the wrapping token itself)."""
    token = (data.get("token") or "").strip() or request.client_token
    if not token:
        raise InvalidRequestError("wrapping token is not valid or does not exist")
    return token
