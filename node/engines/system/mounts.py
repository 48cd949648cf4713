"""``sys/mounts``: list and enable secrets engines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.engines.types import ENGINE_TYPES
from node.errors import InvalidRequestError, UnsupportedPathError
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.routing.mounts import new_mount

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["mount_paths"]

_RESERVED = ("sys/", "auth/", "cubbyhole/", "identity/")


def mount_paths(core: Core) -> list[Path]:
    async def list_mounts(request: Request, data: FieldData) -> Response:
        listing = {e.path: e.describe() for e in core.mounts.entries()}
        return Response(data=listing, top_level_data=True)

    async def read_mount(request: Request, data: FieldData) -> Response:
        path = _normalise(data.get("path"))
        for entry in core.mounts.entries():
            if entry.path == path:
                return Response(data=entry.describe())
        raise UnsupportedPathError(f"no mount at {path}")

    async def enable(request: Request, data: FieldData) -> None:
        path = _normalise(data.get("path"))
        if any(path.startswith(r) for r in _RESERVED):
            raise InvalidRequestError(f"cannot mount at reserved path {path!r}")
        type_ = data.get("type")
        if type_ not in ENGINE_TYPES:
            raise InvalidRequestError(f"plugin not found in the catalog: {type_}")
        options = {str(k): str(v) for k, v in (data.get("options") or {}).items()}
        await core.mounts.enable(
            new_mount(
                path,
                type_,
                description=data.get("description"),
                config=dict(data.get("config") or {}),
                options=options,
                local=data.get("local"),
                seal_wrap=data.get("seal_wrap"),
            )
        )

    return [
        Path("mounts", operations={Operation.READ: list_mounts}, summary="List mounted engines."),
        Path(
            r"mounts/(?P<path>.+)",
            operations={Operation.READ: read_mount, Operation.UPDATE: enable},
            fields={
                "type": Field(FieldType.STRING, "Engine type, e.g. kv or kv-v2.", required=False),
                "description": Field(FieldType.STRING, "Human-friendly description.", ""),
                "config": Field(FieldType.MAP, "default_lease_ttl, max_lease_ttl, force_no_cache."),
                "options": Field(FieldType.MAP, "Engine options such as version."),
                "local": Field(FieldType.BOOL, "Not replicated.", False),
                "seal_wrap": Field(FieldType.BOOL, "Extra HSM-backed encryption.", False),
            },
            summary="Enable or read one mount.",
        ),
    ]


def _normalise(path: str) -> str:
    path = path.strip("/")
    if not path:
        raise InvalidRequestError("mount path must not be empty")
    return path + "/"
