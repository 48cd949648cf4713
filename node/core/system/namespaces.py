"""``sys/namespaces``: create, read, list, patch and delete child namespaces.

Paths are relative to the namespace the request addresses, so
``/v1/ns1/sys/namespaces/ns2`` (or header ``ns1`` and ``sys/namespaces/ns2``)
creates ``ns1/ns2/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace
from sdk.errors import InvalidRequestError, UnsupportedPathError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["NamespacePaths"]


def _shown(namespace: Namespace) -> dict[str, Any]:
    return {
        "id": namespace.id,
        "path": namespace.path,
        "custom_metadata": namespace.custom_metadata,
    }


def _metadata(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise InvalidRequestError("custom_metadata must be an object of strings")
    return dict(raw)


_FIELDS = {"custom_metadata": Field(FieldType.MAP, "Metadata about the namespace.")}


class NamespacePaths:
    """The children of ``parent``, the namespace the request addresses."""

    def __init__(self, core: Core, parent: Namespace = ROOT) -> None:
        self._core = core
        self._parent = parent

    def paths(self) -> list[Path]:
        return [
            Path("namespaces/?", {Operation.LIST: self._list}, {}, "List child namespaces."),
            Path(
                r"namespaces/(?P<path>.+)",
                {
                    Operation.READ: self._read,
                    Operation.CREATE: self._create,
                    Operation.UPDATE: self._create,
                    Operation.PATCH: self._patch,
                    Operation.DELETE: self._delete,
                },
                _FIELDS,
                "Create, read, update metadata of or delete a child namespace.",
                exists=self._exists,
            ),
        ]

    def _child(self, name: str) -> Namespace:
        found = self._core.namespaces.by_path(self._parent.path + name.strip("/"))
        if found is None or found.id == self._parent.id:
            raise UnsupportedPathError()
        return found

    async def _list(self, request: Request, data: FieldData) -> Response:
        parent = self._parent
        children = sorted(self._core.namespaces.children(parent), key=lambda ns: ns.path)
        if not children:
            raise UnsupportedPathError()
        keys = [ns.path[len(parent.path) :] for ns in children]
        return Response(
            data={
                "keys": keys,
                "key_info": {key: _shown(ns) for key, ns in zip(keys, children, strict=True)},
            }
        )

    async def _read(self, request: Request, data: FieldData) -> Response:
        return Response(data=_shown(self._child(data.get("path"))))

    async def _exists(self, request: Request, data: FieldData) -> bool:
        path = self._parent.path + str(data.get("path")).strip("/")
        return self._core.namespaces.by_path(path) is not None

    async def _create(self, request: Request, data: FieldData) -> Response:
        namespace = await self._core.create_namespace(
            self._parent, data.get("path"), _metadata(data.raw.get("custom_metadata"))
        )
        return Response(data=_shown(namespace))

    async def _patch(self, request: Request, data: FieldData) -> Response:
        namespace = self._child(data.get("path"))
        merged = dict(namespace.custom_metadata)
        for key, value in (data.get("custom_metadata") or {}).items():
            if value is None:
                merged.pop(key, None)
            elif isinstance(value, str):
                merged[key] = value
            else:
                raise InvalidRequestError("custom_metadata values must be strings or null")
        updated = await self._core.namespaces.update_metadata(namespace, merged)
        return Response(data=_shown(updated))

    async def _delete(self, request: Request, data: FieldData) -> None:
        await self._core.delete_namespace(self._child(data.get("path")))
