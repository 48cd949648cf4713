"""``sys/seal``, ``sys/rotate``, ``sys/key-status`` and ``sys/generate-root``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.errors import NotInitializedError
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.seal.generate_root import TokenGeneration
from node.seal.keys import decode_key

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["key_paths"]


def key_paths(core: Core) -> list[Path]:
    async def seal(request: Request, data: FieldData) -> None:
        await core.seal()

    async def rotate(request: Request, data: FieldData) -> None:
        await core.barrier.rotate()

    async def key_status(request: Request, data: FieldData) -> Response:
        term, install_time, encryptions = core.barrier.key_status()
        return Response(
            data={"term": term, "install_time": install_time, "encryptions": encryptions},
            top_level_data=True,
        )

    async def threshold() -> int:
        config = await core.lifecycle.seal_config()
        if config is None:
            raise NotInitializedError()
        return config.secret_threshold

    async def attempt_status(request: Request, data: FieldData) -> Response:
        return Response(raw=core.root_generation.status(await threshold()))

    async def attempt_start(request: Request, data: FieldData) -> Response:
        status = core.root_generation.start(await threshold(), data.get("otp"), data.get("pgp_key"))
        return Response(raw=status)

    async def attempt_cancel(request: Request, data: FieldData) -> None:
        core.root_generation.cancel()

    async def attempt_update(request: Request, data: FieldData) -> Response:
        share = decode_key(data.get("key"))
        status = await core.root_generation.update(share, data.get("nonce"), await threshold())
        return Response(raw=status)

    return [
        Path("seal", operations={Operation.UPDATE: seal}, sudo=True, summary="Seal this node."),
        Path(
            "rotate(/keyring)?",
            operations={Operation.UPDATE: rotate},
            sudo=True,
            summary="Add a new barrier key term; new writes use it.",
        ),
        Path(
            "key-status",
            operations={Operation.READ: key_status},
            summary="The active barrier key term and its install time.",
        ),
        Path(
            "generate-root/attempt",
            operations={
                Operation.READ: attempt_status,
                Operation.UPDATE: attempt_start,
                Operation.DELETE: attempt_cancel,
            },
            fields={
                "otp": Field(FieldType.STRING, "One-time password; generated when omitted.", ""),
                "pgp_key": Field(FieldType.STRING, "Not supported.", ""),
            },
            unauthenticated=True,
            summary="Start, read or cancel a root token generation.",
        ),
        Path(
            "generate-root/update",
            operations={Operation.UPDATE: attempt_update},
            fields={
                "key": Field(FieldType.STRING, "One unseal key share.", required=True),
                "nonce": Field(FieldType.STRING, "Nonce of the generation attempt.", required=True),
            },
            unauthenticated=True,
            summary="Enter one unseal key share towards the new root token.",
        ),
    ]


def make_root_generation(core: Core) -> TokenGeneration:
    async def mint() -> str:
        token, _ = await core.tokens.create_root()
        return token

    return TokenGeneration(core.lifecycle.seal.root_key_from_shares, mint)
