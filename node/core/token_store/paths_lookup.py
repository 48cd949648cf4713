"""``lookup``, ``lookup-self`` and ``lookup-accessor``: a token's properties."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.core.token_store.fields import ACCESSOR, TOKEN
from node.core.token_store.resolve import TokenResolver
from node.framework import FieldData, Path
from node.logical.request import Operation, Request
from node.logical.response import Response

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["LookupPaths"]


class LookupPaths:
    def __init__(self, core: Core, tokens: TokenResolver) -> None:
        self._core = core
        self._tokens = tokens

    def paths(self) -> list[Path]:
        update = Operation.UPDATE
        return [
            Path(
                "lookup",
                {update: self._lookup, Operation.READ: self._lookup},
                TOKEN,
                "Look up a token.",
            ),
            Path(
                "lookup-self",
                {Operation.READ: self._lookup_self, update: self._lookup_self},
                {},
                "Look up the calling token.",
            ),
            Path(
                "lookup-accessor",
                {update: self._lookup_accessor},
                ACCESSOR,
                "Look up a token by accessor.",
            ),
        ]

    async def _lookup(self, request: Request, data: FieldData) -> Response:
        if not data.get("token"):
            return await self._lookup_self(request, data)
        entry = await self._tokens.named(data)
        return Response(data=await self._core.describe_token(entry, data.get("token")))

    async def _lookup_self(self, request: Request, data: FieldData) -> Response:
        entry = await self._tokens.caller(request)
        return Response(data=await self._core.describe_token(entry, request.client_token))

    async def _lookup_accessor(self, request: Request, data: FieldData) -> Response:
        entry = await self._tokens.by_accessor(data)
        return Response(data=await self._core.describe_token(entry, ""))
