"""``renew``, ``renew-self`` and ``renew-accessor``: extend a service token's life."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from node.core.renewal import renew_with_method
from node.core.token_store.fields import ACCESSOR, INCREMENT, TOKEN
from node.core.token_store.resolve import TokenResolver
from node.framework import FieldData, Path
from node.logical.request import Operation, Request
from node.logical.response import Auth, Response
from node.tokens.entry import TokenEntry
from node.tokens.ttl import renewed_expiry
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["RenewPaths"]


class RenewPaths:
    def __init__(self, core: Core, tokens: TokenResolver) -> None:
        self._core = core
        self._tokens = tokens

    def paths(self) -> list[Path]:
        update = Operation.UPDATE
        return [
            Path("renew", {update: self._renew}, TOKEN | INCREMENT, "Renew a token."),
            Path("renew-self", {update: self._renew_self}, INCREMENT, "Renew the calling token."),
            Path(
                "renew-accessor",
                {update: self._renew_accessor},
                ACCESSOR | INCREMENT,
                "Renew a token by accessor.",
            ),
        ]

    async def _renew(self, request: Request, data: FieldData) -> Response:
        token = (data.get("token") or "").strip()
        if not token:
            raise InvalidRequestError("missing token")
        entry = await self._tokens.scope.token(token)
        if entry is None:
            raise InvalidRequestError("token not found")
        return await self._renew_entry(request, entry, data.get("increment"), token)

    async def _renew_self(self, request: Request, data: FieldData) -> Response:
        entry = await self._tokens.caller(request)
        return await self._renew_entry(request, entry, data.get("increment"), request.client_token)

    async def _renew_accessor(self, request: Request, data: FieldData) -> Response:
        entry = await self._tokens.by_accessor(data)
        return await self._renew_entry(request, entry, data.get("increment"))

    async def _renew_entry(
        self, request: Request, entry: TokenEntry, increment: int, token_id: str = ""
    ) -> Response:
        if entry.type == "batch":
            raise InvalidRequestError("batch tokens cannot be renewed")
        if not entry.renewable:
            raise InvalidRequestError("lease is not renewable")
        # The issuing auth method may refuse, or refresh policies and TTLs.
        renewal = await renew_with_method(self._core, entry, request)
        entry, increment = renewal.entry, increment or renewal.ttl
        now = time.time()
        server_max = self._core.settings.max_lease_ttl
        lifetime = renewed_expiry(
            entry,
            now=now,
            increment=increment,
            max_ttl=min(server_max, entry.max_ttl) if entry.max_ttl else server_max,
        )
        renewed = entry.with_changes(expire_time=lifetime.expire_time, last_renewal_time=now)
        await self._core.tokens.save(renewed)
        auth = Auth(
            client_token=token_id,
            accessor=entry.accessor,
            policies=entry.policies,
            token_policies=entry.policies,
            metadata=entry.meta,
            display_name=entry.display_name,
            lease_duration=lifetime.ttl,
            renewable=entry.renewable,
            entity_id=entry.entity_id,
            token_type=entry.type,
            orphan=entry.orphan,
            num_uses=entry.num_uses,
        )
        return Response(auth=auth, warnings=list(lifetime.warnings))
