"""``sys/seal``, ``sys/rotate``, ``sys/key-status`` and ``sys/generate-root``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.seal.generate_root import TokenGeneration
from node.seal.keys import decode_key
from sdk.errors import NotInitializedError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["KeyPaths", "make_root_generation"]


_ATTEMPT_FIELDS = {
    "otp": Field(FieldType.STRING, "One-time password; generated when omitted.", ""),
    "pgp_key": Field(FieldType.STRING, "Not supported.", ""),
}
_UPDATE_FIELDS = {
    "key": Field(FieldType.STRING, "One unseal key share.", required=True),
    "nonce": Field(FieldType.STRING, "Nonce of the generation attempt.", required=True),
}


class KeyPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        return [
            Path(
                "seal",
                operations={Operation.UPDATE: self._seal},
                sudo=True,
                summary="Seal this node.",
            ),
            Path(
                "rotate(/keyring)?",
                operations={Operation.UPDATE: self._rotate},
                sudo=True,
                summary="Add a new barrier key term; new writes use it.",
            ),
            Path(
                "key-status",
                operations={Operation.READ: self._key_status},
                summary="The active barrier key term and its install time.",
            ),
            Path(
                "generate-root/attempt",
                operations={
                    Operation.READ: self._attempt_status,
                    Operation.UPDATE: self._attempt_start,
                    Operation.DELETE: self._attempt_cancel,
                },
                fields=_ATTEMPT_FIELDS,
                unauthenticated=True,
                summary="Start, read or cancel a root token generation.",
            ),
            Path(
                "generate-root/update",
                operations={Operation.UPDATE: self._attempt_update},
                fields=_UPDATE_FIELDS,
                unauthenticated=True,
                summary="Enter one unseal key share towards the new root token.",
            ),
        ]

    async def _seal(self, request: Request, data: FieldData) -> None:
        await self._core.seal()

    async def _rotate(self, request: Request, data: FieldData) -> None:
        await self._core.barrier.rotate()

    async def _key_status(self, request: Request, data: FieldData) -> Response:
        term, install_time, encryptions = self._core.barrier.key_status()
        return Response(
            data={"term": term, "install_time": install_time, "encryptions": encryptions},
            top_level_data=True,
        )

    async def _threshold(self) -> int:
        # The shares operators hold: recovery keys under an HSM seal.
        config = await self._core.lifecycle.share_config()
        if config is None:
            raise NotInitializedError()
        return config.secret_threshold

    async def _attempt_status(self, request: Request, data: FieldData) -> Response:
        return Response(raw=self._core.root_generation.status(await self._threshold()))

    async def _attempt_start(self, request: Request, data: FieldData) -> Response:
        threshold = await self._threshold()
        generation = self._core.root_generation
        return Response(raw=generation.start(threshold, data.get("otp"), data.get("pgp_key")))

    async def _attempt_cancel(self, request: Request, data: FieldData) -> None:
        self._core.root_generation.cancel()

    async def _attempt_update(self, request: Request, data: FieldData) -> Response:
        share = decode_key(data.get("key"))
        threshold = await self._threshold()
        status = await self._core.root_generation.update(share, data.get("nonce"), threshold)
        return Response(raw=status)


def make_root_generation(core: Core) -> TokenGeneration:
    async def mint() -> str:
        token, _ = await core.tokens.create_root()
        return token

    return TokenGeneration(core.lifecycle.seal.root_key_from_shares, mint)
