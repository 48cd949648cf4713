"""``metadata/:path``: a key's settings and version history, and key listing."""

from __future__ import annotations

from typing import Any

from node.engines.kv.paths_data import PATH_FIELD
from node.engines.kv.records import KeyMetadata
from node.engines.kv.settings import (
    CAS_IGNORED_WARNING,
    SETTING_FIELDS,
    check_custom_metadata,
    check_duration,
    check_max_versions,
    custom_metadata_values,
)
from node.engines.kv.store import KVStore
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk.errors import UnsupportedPathError
from sdk.physical import TxnOp

__all__ = ["MetadataPaths"]

_SETTINGS = ("max_versions", "cas_required", "delete_version_after", "custom_metadata")
#: What a merge-patch ``null`` resets each setting to.
_RESET: dict[str, Any] = {
    "max_versions": 0,
    "cas_required": False,
    "delete_version_after": 0,
    "custom_metadata": None,
}

_HELP = """\
GET returns the key's settings and the metadata of every version it holds
(created_time, deletion_time, destroyed). LIST returns the keys below a folder;
folders end with "/". DELETE removes the key: its metadata and every version.

POST/PUT sets max_versions, cas_required, delete_version_after and
custom_metadata (replaced as a whole), creating the key's metadata if it has
none yet: such a key has current_version 0 until data is written. Lowering
max_versions removes the oldest versions on the key's next write, as the
reference does, so the metadata write never destroys data by itself.

PATCH (Content-Type: application/merge-patch+json) changes only the given
settings of an existing key; custom_metadata is merged, a null value removes a
key, and a null setting resets it."""


class MetadataPaths:
    """Handlers that read or change a key's metadata record."""

    def __init__(self, store: KVStore) -> None:
        self._store = store

    def paths(self) -> list[Path]:
        return [
            Path(
                r"metadata/(?P<path>.*)",
                operations={
                    Operation.READ: self._read,
                    Operation.LIST: self._list,
                    Operation.UPDATE: self._write,
                    Operation.PATCH: self._patch,
                    Operation.DELETE: self._delete,
                },
                fields={
                    "path": PATH_FIELD,
                    **SETTING_FIELDS,
                    "custom_metadata": Field(
                        FieldType.MAP,
                        "Version-agnostic string pairs describing the secret: at most 64 "
                        "keys of 1-128 bytes, values of 1-512 bytes, printable only.",
                    ),
                },
                exists=self._exists,
                summary="Configure, read, list or delete a secret's metadata and versions.",
                description=_HELP,
            )
        ]

    async def _exists(self, request: Request, data: FieldData) -> bool:
        return await self._store.exists(data.get("path"))

    async def _read(self, request: Request, data: FieldData) -> Response:
        meta, _ = await self._store.load(data.get("path"))
        if meta is None:
            raise UnsupportedPathError()
        return Response(data=meta.metadata_json())

    async def _list(self, request: Request, data: FieldData) -> Response:
        prefix: str = data.get("path") or ""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys = await self._store.view.list(f"metadata/{prefix}")
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})

    async def _delete(self, request: Request, data: FieldData) -> None:
        await self._store.remove(data.get("path"))

    async def _write(self, request: Request, data: FieldData) -> Response | None:
        """Set the given settings; no known setting is a no-op (204), as the reference."""
        changes = _changes(data, patch=False)
        if not changes:
            return None

        async def apply(meta: KeyMetadata) -> list[TxnOp]:
            _apply(meta, changes, merge=False)
            return []

        await self._store.mutate(data.get("path"), apply, create=True)
        return await self._warnings(changes)

    async def _patch(self, request: Request, data: FieldData) -> Response | None:
        changes = _changes(data, patch=True)

        async def apply(meta: KeyMetadata) -> list[TxnOp]:
            _apply(meta, changes, merge=True)
            return []

        await self._store.mutate(data.get("path"), apply)
        return await self._warnings(changes)

    async def _warnings(self, changes: dict[str, Any]) -> Response | None:
        if changes.get("cas_required") is False and (await self._store.config()).cas_required:
            return Response(warnings=[CAS_IGNORED_WARNING])
        return None


def _changes(data: FieldData, *, patch: bool) -> dict[str, Any]:
    """The validated settings a request changes. In a patch, an explicit ``null``
    resets a setting and ``custom_metadata`` holds ``None`` for keys to remove."""
    changes: dict[str, Any] = {}
    if patch:
        changes.update({k: _RESET[k] for k in _SETTINGS if k in data.raw and data.raw[k] is None})
    if data.given("max_versions"):
        changes["max_versions"] = check_max_versions(data.get("max_versions"))
    if data.given("cas_required"):
        changes["cas_required"] = data.get("cas_required")
    if data.given("delete_version_after"):
        changes["delete_version_after"] = check_duration(data.get("delete_version_after"))
    if data.given("custom_metadata"):
        values = custom_metadata_values(data.get("custom_metadata"), keep_nulls=patch)
        check_custom_metadata({k: v for k, v in values.items() if v is not None})
        changes["custom_metadata"] = values
    return changes


def _apply(meta: KeyMetadata, changes: dict[str, Any], *, merge: bool) -> None:
    """Apply ``changes``; with ``merge`` custom_metadata entries are merged into
    the existing ones instead of replacing them (``None`` there clears them all)."""
    for name in ("max_versions", "cas_required", "delete_version_after"):
        if name in changes:
            setattr(meta, name, changes[name])
    if "custom_metadata" not in changes:
        return
    patch: dict[str, str | None] | None = changes["custom_metadata"]
    merged = dict(meta.custom_metadata) if merge and patch is not None else {}
    for key, value in (patch or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    check_custom_metadata(merged)  # a merge may push the key count past the limit
    meta.custom_metadata = merged
