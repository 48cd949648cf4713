"""Cubbyhole: private storage of one token, gone when the token is revoked.

The engine's view is split by the calling token's ``cubbyhole_id``, so no
token — not even root — can see another token's cubbyhole.
"""

from __future__ import annotations

from node.barrier.view import BarrierView
from node.framework import FieldData, FrameworkBackend, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk import jsoncodec
from sdk.errors import InvalidRequestError, PermissionDeniedError, UnsupportedPathError
from sdk.physical import Delete

__all__ = ["CubbyholeBackend"]


class CubbyholeBackend(FrameworkBackend):
    type = "cubbyhole"
    help_text = "Per-token private storage: only the token that wrote a value can read it."

    def __init__(self, view: BarrierView) -> None:
        self._view = view
        super().__init__(
            [
                Path(
                    r"(?P<path>.*)",
                    {
                        Operation.READ: self._read,
                        Operation.UPDATE: self._write,
                        Operation.DELETE: self._delete,
                        Operation.LIST: self._list,
                    },
                    exists=self._exists,
                    free_form=True,
                    summary="Read, write, list or delete values in the caller's cubbyhole.",
                )
            ]
        )

    def view_for(self, cubbyhole_id: str) -> BarrierView:
        return self._view.sub_view(f"{cubbyhole_id}/")

    def _mine(self, request: Request) -> BarrierView:
        if request.auth is None:
            raise PermissionDeniedError()
        if not request.auth.cubbyhole_id:
            raise InvalidRequestError(
                'cubbyhole operations are only supported by "service" type tokens'
            )
        return self.view_for(request.auth.cubbyhole_id)

    async def _exists(self, request: Request, data: FieldData) -> bool:
        path = data.get("path")
        return bool(path) and await self._mine(request).get(path) is not None

    async def _read(self, request: Request, data: FieldData) -> Response:
        path = data.get("path")
        found = await self._mine(request).get(path) if path and not path.endswith("/") else None
        if found is None:
            raise UnsupportedPathError()
        return Response(data=jsoncodec.loads(found.value))

    async def _write(self, request: Request, data: FieldData) -> None:
        path = data.get("path")
        if not path or path.endswith("/"):
            raise InvalidRequestError("a path is required and may not end with '/'")
        if not request.data:
            raise InvalidRequestError("missing data fields")
        await self._mine(request).put_json(path, dict(request.data))

    async def _delete(self, request: Request, data: FieldData) -> None:
        if data.get("path"):
            await self._mine(request).delete(data.get("path"))

    async def _list(self, request: Request, data: FieldData) -> Response:
        prefix = data.get("path") or ""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys = await self._mine(request).list(prefix)
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})

    async def destroy(self, cubbyhole_id: str) -> None:
        """Remove everything a revoked token kept here."""
        view = self.view_for(cubbyhole_id)
        keys = await view.list_recursive()
        if keys:
            await view.commit([Delete(key) for key in keys])
