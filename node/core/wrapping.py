"""Response wrapping: a response is parked in a single-use token's cubbyhole.

The wrapping token has the ``response-wrapping`` policy, one use and a TTL
equal to the wrap TTL. Unwrapping removes the parked response with a
conditional delete, so of two concurrent unwraps exactly one gets it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from node.engines.cubbyhole import CubbyholeBackend
from node.logical.response import Auth, Response, WrapInfo
from node.tokens.entry import TokenEntry, rfc3339
from sdk.errors import InvalidRequestError, RevisionMismatchError
from sdk.physical import Delete

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["INVALID_WRAPPING_TOKEN", "WRAPPING_POLICY", "Wrapping"]

WRAPPING_POLICY = "response-wrapping"
INVALID_WRAPPING_TOKEN = "wrapping token is not valid or does not exist"


class Wrapping:
    def __init__(self, core: Core) -> None:
        self._core = core

    def _cubbyhole(self) -> CubbyholeBackend:
        for entry in self._core.router.entries():
            route = self._core.router.match(entry.route_path)
            if (
                entry.type == "cubbyhole"
                and route is not None
                and isinstance(route.backend, CubbyholeBackend)
            ):
                return route.backend
        raise InvalidRequestError("no cubbyhole mount to hold wrapped responses")

    async def wrap(self, response: Response, ttl: int, creation_path: str) -> Response:
        max_ttl = self._core.settings.max_lease_ttl
        if max_ttl and ttl > max_ttl:
            ttl = max_ttl  # as for every token: never longer than the system max TTL
        now = time.time()
        entry = TokenEntry(
            key="",
            accessor="",
            policies=[WRAPPING_POLICY],
            display_name="response-wrapping",
            creation_time=now,
            path=creation_path,
            num_uses=1,
            creation_ttl=ttl,
            expire_time=now + ttl,
            explicit_max_ttl=ttl,
            renewable=False,
        )
        token_id, entry = await self._core.tokens.store_new(entry)
        parked = {
            "creation_path": creation_path,
            "creation_time": rfc3339(now),
            "creation_ttl": ttl,
            "response": _dump(response),
        }
        await self._cubbyhole().view_for(entry.cubbyhole_id).put_json("response", parked)
        info = WrapInfo(
            token=token_id,
            accessor=entry.accessor,
            ttl=ttl,
            creation_time=rfc3339(now),
            creation_path=creation_path,
            wrapped_accessor=response.auth.accessor if response.auth else "",
        )
        return Response(wrap_info=info)

    async def _wrapping_entry(self, token_id: str, spent_by_caller: bool = False) -> TokenEntry:
        """The wrapping token's entry. ``spent_by_caller``: the token was the
        request's own client token, so the pipeline already counted its one use."""
        tokens = self._core.tokens
        entry = await tokens.get_by_key(await tokens.hash_id(token_id)) if token_id else None
        if entry is None or entry.expired() or entry.policies != [WRAPPING_POLICY]:
            raise InvalidRequestError(INVALID_WRAPPING_TOKEN)
        if entry.num_uses < 0 and not spent_by_caller:
            raise InvalidRequestError(INVALID_WRAPPING_TOKEN)
        return entry

    async def lookup(self, token_id: str, spent_by_caller: bool = False) -> dict[str, Any]:
        entry = await self._wrapping_entry(token_id, spent_by_caller)
        parked = await self._cubbyhole().view_for(entry.cubbyhole_id).get_json("response")
        if parked is None:
            raise InvalidRequestError(INVALID_WRAPPING_TOKEN)
        return {k: parked[k] for k in ("creation_path", "creation_time", "creation_ttl")}

    async def _take(self, token_id: str, spent_by_caller: bool) -> dict[str, Any]:
        """Remove and return the parked response; only one caller can win."""
        entry = await self._wrapping_entry(token_id, spent_by_caller)
        view = self._cubbyhole().view_for(entry.cubbyhole_id)
        found = await view.get("response")
        if found is None:
            raise InvalidRequestError(INVALID_WRAPPING_TOKEN)
        try:
            await view.commit([Delete("response", expect=found.revision)])
        except RevisionMismatchError as exc:
            raise InvalidRequestError(INVALID_WRAPPING_TOKEN) from exc
        await self._core.tokens.revoke_tree(entry)
        parked: dict[str, Any] = json.loads(found.value)
        return parked

    async def unwrap(self, token_id: str, spent_by_caller: bool = False) -> Response:
        return _load(self._take_response(await self._take(token_id, spent_by_caller)))

    async def rewrap(self, token_id: str, spent_by_caller: bool = False) -> Response:
        parked = await self._take(token_id, spent_by_caller)
        return await self.wrap(
            _load(parked["response"]), int(parked["creation_ttl"]), parked["creation_path"]
        )

    @staticmethod
    def _take_response(parked: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = parked["response"]
        return response


def _dump(response: Response) -> dict[str, Any]:
    return {
        "data": response.data,
        "warnings": response.warnings,
        "auth": asdict(response.auth) if response.auth else None,
        "lease_id": response.lease_id,
        "lease_duration": response.lease_duration,
        "renewable": response.renewable,
    }


def _load(raw: dict[str, Any]) -> Response:
    auth = Auth(**raw["auth"]) if raw.get("auth") else None
    return Response(
        data=raw.get("data"),
        warnings=list(raw.get("warnings") or []),
        auth=auth,
        lease_id=raw.get("lease_id", ""),
        lease_duration=raw.get("lease_duration", 0),
        renewable=raw.get("renewable", False),
    )
