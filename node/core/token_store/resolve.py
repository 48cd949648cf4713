"""Which token a token-store request is about: the caller's, or one it names.

Every path that names a token other than the caller's resolves it through the
namespace's ``TokenScope``: a token of another tenant answers as an unknown one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.framework import FieldData
from node.logical.request import Request
from node.namespaces.model import Namespace
from node.tokens.entry import TokenEntry
from node.tokens.scope import TokenScope
from sdk.errors import InvalidRequestError, PermissionDeniedError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["TokenResolver"]


class TokenResolver:
    """Resolves tokens for one namespace's token mount."""

    def __init__(self, core: Core, namespace: Namespace) -> None:
        self._core = core
        self.scope = TokenScope(core.tokens, core.namespaces, namespace.id)

    async def caller(self, request: Request) -> TokenEntry:
        if request.auth is None:
            raise PermissionDeniedError()
        if request.auth.token_type == "batch":
            entry = await self._core.tokens.lookup(request.client_token)
        else:
            entry = await self._core.tokens.get_by_key(request.auth.token_key)
        if entry is None:
            raise PermissionDeniedError()
        return entry

    async def named(self, data: FieldData) -> TokenEntry:
        """The token of the ``token`` field; unknown (or another tenant's) is a 403."""
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self.scope.token(token)
        if entry is None:
            raise PermissionDeniedError("bad token")
        return entry

    async def by_accessor(self, data: FieldData) -> TokenEntry:
        accessor = (data.get("accessor") or "").strip()
        if not accessor:
            raise InvalidRequestError("missing accessor")
        entry = await self.scope.accessor(accessor)
        if entry is None:
            raise InvalidRequestError("invalid accessor")
        return entry
