"""``revoke*``: end a token (and its children, unless orphaned); list accessors.

The accessor list is here because it is what revoking by accessor works
from (and, like ``revoke-orphan``, it needs sudo).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.core.token_store.fields import ACCESSOR, TOKEN
from node.core.token_store.resolve import TokenResolver
from node.framework import FieldData, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.tokens.entry import TokenEntry
from sdk.errors import InvalidRequestError, UnsupportedPathError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["RevokePaths"]


class RevokePaths:
    def __init__(self, core: Core, tokens: TokenResolver) -> None:
        self._core = core
        self._tokens = tokens

    def paths(self) -> list[Path]:
        update = Operation.UPDATE
        return [
            Path("revoke", {update: self._revoke}, TOKEN, "Revoke a token and its children."),
            Path(
                "revoke-self",
                {update: self._revoke_self},
                {},
                "Revoke the calling token and its children.",
            ),
            Path(
                "revoke-accessor",
                {update: self._revoke_accessor},
                ACCESSOR,
                "Revoke a token by accessor.",
            ),
            Path(
                "revoke-orphan",
                {update: self._revoke_orphan},
                TOKEN,
                "Revoke a token, orphaning its children.",
                sudo=True,
            ),
            Path(
                "accessors/?",
                {Operation.LIST: self._accessors},
                {},
                "List token accessors.",
                sudo=True,
            ),
        ]

    async def _revoke_entry(self, entry: TokenEntry) -> None:
        if entry.type == "batch":
            raise InvalidRequestError("batch tokens cannot be revoked")
        await self._core.tokens.revoke_tree(entry)

    async def _revoke(self, request: Request, data: FieldData) -> None:
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self._tokens.scope.token(token)
        if entry is not None:  # an unknown token is already gone
            await self._revoke_entry(entry)

    async def _revoke_self(self, request: Request, data: FieldData) -> None:
        await self._revoke_entry(await self._tokens.caller(request))

    async def _revoke_accessor(self, request: Request, data: FieldData) -> None:
        await self._revoke_entry(await self._tokens.by_accessor(data))

    async def _revoke_orphan(self, request: Request, data: FieldData) -> None:
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self._tokens.scope.token(token)
        if entry is None:
            raise InvalidRequestError("token to revoke not found")
        if entry.type == "batch":
            raise InvalidRequestError("batch tokens cannot be revoked")
        await self._core.tokens.revoke_orphan(entry)

    async def _accessors(self, request: Request, data: FieldData) -> Response:
        keys = await self._tokens.scope.accessors()
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})
