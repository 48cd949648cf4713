"""Key-value version 1: flat JSON objects at arbitrary paths."""

from __future__ import annotations

import json
from typing import Any

from node.barrier.view import BarrierView
from node.errors import InvalidRequestError, UnsupportedPathError
from node.framework import FieldData, FrameworkBackend, Path
from node.logical.request import Operation, Request
from node.logical.response import Response

__all__ = ["KVv1Backend"]


class KVv1Backend(FrameworkBackend):
    type = "kv"
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
                    exists=self._exists,
                    free_form=True,
                    summary="Read, write, list or delete a secret.",
                    description="Pass any JSON object; it is stored as given.",
                )
            ]
        )

    async def _exists(self, request: Request, data: FieldData) -> bool:
        path = data.get("path")
        return bool(path) and not path.endswith("/") and await self._view.get(path) is not None

    async def _read(self, request: Request, data: FieldData) -> Response:
        path = data.get("path")
        found = await self._view.get(path) if path and not path.endswith("/") else None
        if found is None:
            raise UnsupportedPathError()
        return Response(data=json.loads(found.value))

    async def _write(self, request: Request, data: FieldData) -> None:
        path = data.get("path")
        if not path or path.endswith("/"):
            raise InvalidRequestError("a secret path is required and may not end with '/'")
        body: dict[str, Any] = {k: v for k, v in request.data.items()}
        if not body:
            raise InvalidRequestError("missing data fields")
        await self._view.put_json(path, body)

    async def _delete(self, request: Request, data: FieldData) -> None:
        path = data.get("path")
        if path:
            await self._view.delete(path)

    async def _list(self, request: Request, data: FieldData) -> Response:
        prefix = data.get("path") or ""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys = await self._view.list(prefix)
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})
