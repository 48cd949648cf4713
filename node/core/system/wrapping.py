"""``sys/wrapping/{wrap,unwrap,lookup,rewrap}``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.errors import InvalidRequestError
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["wrapping_paths"]


def wrapping_paths(core: Core) -> list[Path]:
    def wrapping_token(request: Request, data: FieldData) -> str:
        token = (data.get("token") or "").strip() or request.client_token
        if not token:
            raise InvalidRequestError("wrapping token is not valid or does not exist")
        return token

    async def wrap(request: Request, data: FieldData) -> Response:
        if not request.wrap_ttl:
            raise InvalidRequestError("endpoint requires response wrapping to be used")
        if not request.data:
            raise InvalidRequestError("empty wrapping data")
        return Response(data=dict(request.data))

    async def unwrap(request: Request, data: FieldData) -> Response:
        token = wrapping_token(request, data)
        return await core.wrapping.unwrap(token, token == request.client_token)

    async def lookup(request: Request, data: FieldData) -> Response:
        token = wrapping_token(request, data)
        return Response(data=await core.wrapping.lookup(token, token == request.client_token))

    async def rewrap(request: Request, data: FieldData) -> Response:
        token = wrapping_token(request, data)
        return await core.wrapping.rewrap(token, token == request.client_token)

    token = {"token": Field(FieldType.STRING, "The wrapping token.")}
    return [
        Path(
            "wrapping/wrap", {Operation.UPDATE: wrap}, {}, "Wrap the request body.", free_form=True
        ),
        Path("wrapping/unwrap", {Operation.UPDATE: unwrap}, token, "Unwrap a wrapped response."),
        Path(
            "wrapping/lookup",
            {Operation.UPDATE: lookup, Operation.READ: lookup},
            token,
            "Properties of a wrapping token.",
            unauthenticated=True,
        ),
        Path("wrapping/rewrap", {Operation.UPDATE: rewrap}, token, "Re-wrap under a new token."),
    ]
