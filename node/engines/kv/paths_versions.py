"""``delete/``, ``undelete/`` and ``destroy/``: act on listed versions of a key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from node.engines.kv.paths_data import PATH_FIELD
from node.engines.kv.records import KeyMetadata, MountConfig, deletion_time, now_rfc3339
from node.engines.kv.store import KVStore
from node.framework import Field, FieldData, FieldType, Handler, Path
from node.logical.request import Operation, Request
from sdk.errors import InvalidRequestError, UnsupportedPathError
from sdk.physical import Delete, TxnOp

__all__ = ["VersionPaths"]

#: Applies to one existing version and returns extra transaction ops.
Change = Callable[[KeyMetadata, int], list[TxnOp]]


class VersionPaths:
    """Soft-delete, restore and destroy. Unknown versions are skipped and a
    missing key is a no-op (204), as the reference does."""

    def __init__(self, store: KVStore) -> None:
        self._store = store

    def paths(self) -> list[Path]:
        def entry(name: str, handler: Handler, versions: str, summary: str, text: str) -> Path:
            return Path(
                rf"{name}/(?P<path>.+)",
                operations={Operation.UPDATE: handler},
                fields={
                    "path": PATH_FIELD,
                    "versions": Field(FieldType.INT_LIST, versions, required=False),
                },
                summary=summary,
                description=text,
            )

        return [
            entry(
                "delete",
                self._delete,
                "The versions to soft-delete (array or comma-separated string).",
                "Soft-delete versions of a secret.",
                "Marks the versions deleted: reads answer 404 but undelete/ restores them.",
            ),
            entry(
                "undelete",
                self._undelete,
                "The versions to restore (array or comma-separated string).",
                "Restore soft-deleted versions of a secret.",
                "Clears the deletion time of the versions (destroyed ones stay destroyed); "
                "a configured delete_version_after starts again from now.",
            ),
            entry(
                "destroy",
                self._destroy,
                "The versions to destroy (array or comma-separated string).",
                "Permanently remove versions of a secret.",
                "Purges the data of the versions for good; their metadata remains, "
                "marked destroyed.",
            ),
        ]

    async def _change(self, data: FieldData, change: Change) -> None:
        versions: list[int] = data.get("versions") or []
        if not versions:
            raise InvalidRequestError("No version number provided")

        async def apply(meta: KeyMetadata) -> list[TxnOp]:
            ops: list[TxnOp] = []
            for version in dict.fromkeys(versions):
                if version in meta.versions:
                    ops += change(meta, version)
            return ops

        try:
            await self._store.mutate(data.get("path"), apply)
        except UnsupportedPathError:
            return

    async def _delete(self, request: Request, data: FieldData) -> None:
        def soft_delete(meta: KeyMetadata, version: int) -> list[TxnOp]:
            info, now = meta.versions[version], now_rfc3339()
            if info.is_live(now):
                meta.versions[version] = replace(info, deletion_time=now)
            return []

        await self._change(data, soft_delete)

    async def _undelete(self, request: Request, data: FieldData) -> None:
        config: MountConfig = await self._store.config()

        def undelete(meta: KeyMetadata, version: int) -> list[TxnOp]:
            info = meta.versions[version]
            if not info.destroyed:
                expires = deletion_time(now_rfc3339(), config, meta.delete_version_after)
                meta.versions[version] = replace(info, deletion_time=expires)
            return []

        await self._change(data, undelete)

    async def _destroy(self, request: Request, data: FieldData) -> None:
        def destroy(meta: KeyMetadata, version: int) -> list[TxnOp]:
            meta.versions[version] = replace(meta.versions[version], destroyed=True)
            return [Delete(self._store.version_key(meta, version))]

        await self._change(data, destroy)
