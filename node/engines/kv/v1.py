"""Key-value version 1: flat JSON objects at arbitrary paths."""

from __future__ import annotations

from typing import Any

from node.barrier.view import BarrierView
from node.engines.kv.store import valid_key
from node.framework import Field, FieldData, FieldType, FrameworkBackend, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk import jsoncodec
from sdk.errors import InvalidRequestError, UnsupportedPathError

__all__ = ["KVv1Backend"]


class KVv1Backend(FrameworkBackend):
    type = "kv"
    #: Every entry is a secret: all seal-wrapped under an HSM seal (the reference's passthrough).
    seal_wrap_storage: tuple[str, ...] = ("*",)
    help_text = "The key-value (version 1) engine stores arbitrary JSON objects at paths."

    def __init__(self, view: BarrierView) -> None:
        self._view = view
        super().__init__(
            [
                Path(
                    r"(?P<path>.*)",
                    operations={
                        Operation.READ: self._read,
                        Operation.UPDATE: self._write,
                        Operation.DELETE: self._delete,
                        Operation.LIST: self._list,
                    },
                    fields={"path": Field(FieldType.STRING, "Location of the secret.")},
                    exists=self._exists,
                    free_form=True,
                    summary="Read, write, list or delete a secret.",
                    description=(
                        "A write stores the JSON body as given, replacing what was there. "
                        "A read returns it; a missing key is 404. LIST returns the keys "
                        "below a folder (folders end with '/'); a folder with no keys, or a "
                        "key that is not a folder, is 404. DELETE always succeeds."
                    ),
                )
            ]
        )

    async def _exists(self, request: Request, data: FieldData) -> bool:
        path = data.get("path")
        return valid_key(path) and await self._view.get(path) is not None

    async def _read(self, request: Request, data: FieldData) -> Response:
        path = data.get("path")
        found = await self._view.get(path) if valid_key(path) else None
        if found is None:
            raise UnsupportedPathError()
        return Response(data=jsoncodec.loads(found.value))

    async def _write(self, request: Request, data: FieldData) -> None:
        path = data.get("path")
        if not valid_key(path):
            raise InvalidRequestError(
                "a secret path is required; it may not end with '/' or contain empty, "
                "'.' or '..' segments"
            )
        body: dict[str, Any] = {k: v for k, v in request.data.items()}
        if not body:
            raise InvalidRequestError("missing data fields")
        await self._view.put_json(path, body)

    async def _delete(self, request: Request, data: FieldData) -> None:
        path = data.get("path")
        if valid_key(path):
            await self._view.delete(path)

    async def _list(self, request: Request, data: FieldData) -> Response:
        prefix = data.get("path") or ""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys = await self._view.list(prefix)
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})
