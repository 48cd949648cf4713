"""``sys/namespaces``: create, read, list, patch and delete child namespaces.

Paths are relative to the namespace the request addresses, so
``/v1/ns1/sys/namespaces/ns2`` (or header ``ns1`` and ``sys/namespaces/ns2``)
creates ``ns1/ns2/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from node.errors import InvalidRequestError, UnsupportedPathError
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.namespaces.model import ROOT, Namespace

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["namespace_paths"]


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


def namespace_paths(core: Core, parent: Namespace = ROOT) -> list[Path]:
    def child(name: str) -> Namespace:
        found = core.namespaces.by_path(parent.path + name.strip("/"))
        if found is None or found.id == parent.id:
            raise UnsupportedPathError()
        return found

    async def listing(request: Request, data: FieldData) -> Response:
        children = sorted(core.namespaces.children(parent), key=lambda ns: ns.path)
        if not children:
            raise UnsupportedPathError()
        keys = [ns.path[len(parent.path) :] for ns in children]
        return Response(
            data={
                "keys": keys,
                "key_info": {key: _shown(ns) for key, ns in zip(keys, children, strict=True)},
            }
        )

    async def read(request: Request, data: FieldData) -> Response:
        return Response(data=_shown(child(data.get("path"))))

    async def exists(request: Request, data: FieldData) -> bool:
        return core.namespaces.by_path(parent.path + str(data.get("path")).strip("/")) is not None

    async def create(request: Request, data: FieldData) -> Response:
        namespace = await core.create_namespace(
            parent, data.get("path"), _metadata(data.raw.get("custom_metadata"))
        )
        return Response(data=_shown(namespace))

    async def patch(request: Request, data: FieldData) -> Response:
        namespace = child(data.get("path"))
        merged = dict(namespace.custom_metadata)
        for key, value in (data.get("custom_metadata") or {}).items():
            if value is None:
                merged.pop(key, None)
            elif isinstance(value, str):
                merged[key] = value
            else:
                raise InvalidRequestError("custom_metadata values must be strings or null")
        return Response(data=_shown(await core.namespaces.update_metadata(namespace, merged)))

    async def delete(request: Request, data: FieldData) -> None:
        await core.delete_namespace(child(data.get("path")))

    return [
        Path("namespaces/?", {Operation.LIST: listing}, {}, "List child namespaces."),
        Path(
            r"namespaces/(?P<path>.+)",
            {
                Operation.READ: read,
                Operation.CREATE: create,
                Operation.UPDATE: create,
                Operation.PATCH: patch,
                Operation.DELETE: delete,
            },
            {"custom_metadata": Field(FieldType.MAP, "Metadata about the namespace.")},
            "Create, read, update metadata of or delete a child namespace.",
            exists=exists,
        ),
    ]
