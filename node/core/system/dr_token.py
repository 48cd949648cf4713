"""``sys/replication/dr/secondary/generate-operation-token/*`` and ``operation-token/delete``.

The generate-root OTP flow (``node.seal.generate_root``) with the DR strategy:
the shares are checked against this node's seal exactly as generate-root
checks them, and the token minted at the threshold is a DR operation token
(``node.core.dr_operation``). Called without a client token, as generate-root
is, and answered only on a DR secondary (400 elsewhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.core.dr_operation import require_dr_operation_token, require_dr_secondary
from node.core.system.keys import ATTEMPT_FIELDS, UPDATE_FIELDS, share_threshold
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.seal.generate_root import Strategy
from node.seal.keys import decode_key
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["DrTokenPaths"]

_SECONDARY = "replication/dr/secondary/"
_DELETE_PATH = "sys/" + _SECONDARY + "operation-token/delete"
_DELETE_FIELDS = {
    "dr_operation_token": Field(
        FieldType.STRING, "The DR operation token to delete.", required=True
    ),
}


class DrTokenPaths:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._strategy = Strategy(
            "dr", "DR operation token generation", self._mint, self._is_dr_secondary
        )

    def paths(self) -> list[Path]:
        return [
            Path(
                _SECONDARY + "generate-operation-token/attempt",
                operations={
                    Operation.READ: self._status,
                    Operation.UPDATE: self._start,
                    Operation.DELETE: self._cancel,
                },
                fields=ATTEMPT_FIELDS,
                unauthenticated=True,
                summary="Start, read or cancel a DR operation token generation.",
            ),
            Path(
                _SECONDARY + "generate-operation-token/update",
                operations={Operation.UPDATE: self._update},
                fields=UPDATE_FIELDS,
                unauthenticated=True,
                summary="Enter one of the primary's key shares towards a DR operation token.",
            ),
            Path(
                _SECONDARY + "operation-token/delete",
                operations={Operation.UPDATE: self._delete},
                fields=_DELETE_FIELDS,
                unauthenticated=True,
                summary="Delete a DR operation token generated on this secondary.",
            ),
        ]

    def _is_dr_secondary(self) -> bool:
        return self._core.replication_mode("dr") == "secondary"

    async def _mint(self) -> str:
        return await self._core.dr_operation_tokens.mint()

    async def _status(self, request: Request, data: FieldData) -> Response:
        require_dr_secondary(self._core)
        generation = self._core.token_generation
        return Response(raw=generation.status(self._strategy, await share_threshold(self._core)))

    async def _start(self, request: Request, data: FieldData) -> Response:
        require_dr_secondary(self._core)
        threshold = await share_threshold(self._core)
        generation = self._core.token_generation
        started = generation.start(self._strategy, threshold, data.get("otp"), data.get("pgp_key"))
        return Response(raw=started)

    async def _cancel(self, request: Request, data: FieldData) -> None:
        require_dr_secondary(self._core)
        self._core.token_generation.cancel(self._strategy)

    async def _update(self, request: Request, data: FieldData) -> Response:
        require_dr_secondary(self._core)
        share = decode_key(data.get("key"))
        threshold = await share_threshold(self._core)
        generation = self._core.token_generation
        status = await generation.update(self._strategy, share, data.get("nonce"), threshold)
        return Response(raw=status)

    async def _delete(self, request: Request, data: FieldData) -> None:
        require_dr_secondary(self._core)
        token = await require_dr_operation_token(
            self._core, data.get("dr_operation_token"), _DELETE_PATH
        )
        if not await self._core.dr_operation_tokens.delete(token):
            raise InvalidRequestError(
                "a batch DR operation token cannot be deleted; it ends with its TTL"
            )
