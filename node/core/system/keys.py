"""``sys/seal``, ``sys/rotate``, ``sys/key-status``, ``sys/generate-root`` and ``sys/decode-token``.

``sys/generate-root`` runs the shared generation engine (``node.seal.generate_root``)
with the root strategy; the DR operation token runs it with its own
(``node.core.system.dr_token``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.seal.generate_root import Strategy, TokenGeneration, decode_with_otp
from node.seal.keys import decode_key
from sdk.errors import NotInitializedError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = [
    "ATTEMPT_FIELDS",
    "UPDATE_FIELDS",
    "KeyPaths",
    "make_token_generation",
    "share_threshold",
]


ATTEMPT_FIELDS = {
    "otp": Field(FieldType.STRING, "One-time password; generated when omitted.", ""),
    "pgp_key": Field(FieldType.STRING, "Not supported.", ""),
}
UPDATE_FIELDS = {
    "key": Field(FieldType.STRING, "One unseal key share.", required=True),
    "nonce": Field(FieldType.STRING, "Nonce of the generation attempt.", required=True),
}
_DECODE_FIELDS = {
    "encoded_token": Field(FieldType.STRING, "The encoded token a generation returned.", ""),
    "otp": Field(FieldType.STRING, "The one-time password of that generation.", ""),
}


async def share_threshold(core: Core) -> int:
    """How many shares a generation needs: the shares operators hold (recovery keys
    under an HSM seal)."""
    config = await core.lifecycle.share_config()
    if config is None:
        raise NotInitializedError()
    return config.secret_threshold


class KeyPaths:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._root = Strategy("root", "root generation", self._mint_root)

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
                fields=ATTEMPT_FIELDS,
                unauthenticated=True,
                summary="Start, read or cancel a root token generation.",
            ),
            Path(
                "generate-root/update",
                operations={Operation.UPDATE: self._attempt_update},
                fields=UPDATE_FIELDS,
                unauthenticated=True,
                summary="Enter one unseal key share towards the new root token.",
            ),
            Path(
                "decode-token",
                operations={Operation.UPDATE: self._decode},
                fields=_DECODE_FIELDS,
                unauthenticated=True,
                summary="Decode a token a generation returned encoded with its one-time password.",
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

    async def _mint_root(self) -> str:
        token, _ = await self._core.tokens.create_root()
        return token

    async def _attempt_status(self, request: Request, data: FieldData) -> Response:
        generation = self._core.token_generation
        return Response(raw=generation.status(self._root, await share_threshold(self._core)))

    async def _attempt_start(self, request: Request, data: FieldData) -> Response:
        threshold = await share_threshold(self._core)
        generation = self._core.token_generation
        started = generation.start(self._root, threshold, data.get("otp"), data.get("pgp_key"))
        return Response(raw=started)

    async def _attempt_cancel(self, request: Request, data: FieldData) -> None:
        self._core.token_generation.cancel(self._root)

    async def _attempt_update(self, request: Request, data: FieldData) -> Response:
        share = decode_key(data.get("key"))
        threshold = await share_threshold(self._core)
        generation = self._core.token_generation
        status = await generation.update(self._root, share, data.get("nonce"), threshold)
        return Response(raw=status)

    async def _decode(self, request: Request, data: FieldData) -> Response:
        token = decode_with_otp(data.get("encoded_token"), data.get("otp"))
        return Response(data={"token": token})


def make_token_generation(core: Core) -> TokenGeneration:
    """The core's one generation engine, shared by generate-root and the DR token."""

    async def recover(shares: list[bytes]) -> bytes:
        # Looked up at each use: a seal migration replaces the seal.
        return await core.lifecycle.seal.root_key_from_shares(shares)

    return TokenGeneration(recover)
