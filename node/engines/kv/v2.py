"""Key-value version 2: versioned secrets with check-and-set.

Every change to a key is one transaction conditioned on the revision of the
key's metadata record, so concurrent writers retry instead of both winning:
each version number is handed out exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from node.barrier.view import BarrierView
from node.engines.kv.records import KeyMetadata, VersionInfo, now_rfc3339
from node.errors import InvalidRequestError, RevisionMismatchError, UnsupportedPathError
from node.framework import Field, FieldData, FieldType, FrameworkBackend, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.physical.base import Delete, Put, TxnOp

__all__ = ["INVALID_PATH_WARNING", "KVv2Backend"]

INVALID_PATH_WARNING = (
    "Invalid path for a versioned K/V secrets engine. See the API docs for the appropriate "
    "API endpoints to use. If using the Coffer CLI, use 'coffer kv get' for this operation."
)
_DEFAULT_MAX_VERSIONS = 10
_MAX_RETRIES = 100

Mutation = Callable[[KeyMetadata], list[TxnOp]]


class KVv2Backend(FrameworkBackend):
    type = "kv"
    help_text = "The key-value (version 2) engine keeps a history of versions for each secret."

    def __init__(self, view: BarrierView) -> None:
        self._view = view
        versions = Field(FieldType.INT_LIST, "Versions to act on.")
        super().__init__(
            [
                Path(
                    "config",
                    operations={
                        Operation.READ: self._read_config,
                        Operation.UPDATE: self._write_config,
                    },
                    fields={
                        "max_versions": Field(FieldType.INT, "Versions kept per key (0 = 10)."),
                        "cas_required": Field(FieldType.BOOL, "Require check-and-set on writes."),
                        "delete_version_after": Field(
                            FieldType.DURATION, "Soft-delete versions after this long."
                        ),
                    },
                    summary="Configure the engine.",
                ),
                Path(
                    r"data/(?P<path>.+)",
                    operations={
                        Operation.READ: self._read_data,
                        Operation.UPDATE: self._write_data,
                        Operation.DELETE: self._delete_latest,
                    },
                    fields={
                        "data": Field(FieldType.MAP, "The secret's key-value pairs."),
                        "options": Field(
                            FieldType.MAP, "Write options; 'cas' is the check-and-set version."
                        ),
                        "version": Field(
                            FieldType.INT, "Version to read (0 = current).", default=0
                        ),
                    },
                    exists=self._exists,
                    summary="Write, read or soft-delete the data of a secret.",
                ),
                Path(
                    r"metadata/?(?P<path>.*)",
                    operations={
                        Operation.READ: self._read_metadata,
                        Operation.LIST: self._list_metadata,
                        Operation.DELETE: self._delete_metadata,
                    },
                    summary="Read, list or delete a secret's metadata and all its versions.",
                ),
                Path(
                    r"delete/(?P<path>.+)",
                    operations={Operation.UPDATE: self._delete_versions},
                    fields={"versions": versions},
                    summary="Soft-delete versions.",
                ),
                Path(
                    r"undelete/(?P<path>.+)",
                    operations={Operation.UPDATE: self._undelete_versions},
                    fields={"versions": versions},
                    summary="Restore soft-deleted versions.",
                ),
                Path(
                    r"destroy/(?P<path>.+)",
                    operations={Operation.UPDATE: self._destroy_versions},
                    fields={"versions": versions},
                    summary="Permanently remove versions.",
                ),
            ]
        )

    async def handle(self, request: Request) -> Response | None:
        try:
            return await super().handle(request)
        except UnsupportedPathError:
            if any(request.path.startswith(p) for p in ("data/", "metadata/", "config")):
                raise
            return Response(status=404, warnings=[INVALID_PATH_WARNING])

    # -- storage helpers ------------------------------------------------------

    async def _config(self) -> dict[str, Any]:
        stored = await self._view.get_json("config")
        return stored or {"max_versions": 0, "cas_required": False, "delete_version_after": 0}

    async def _load(self, path: str) -> tuple[KeyMetadata | None, int]:
        found = await self._view.get(f"metadata/{path}")
        if found is None:
            return None, 0
        return KeyMetadata.from_json(json.loads(found.value)), found.revision

    async def _mutate(self, path: str, mutation: Mutation, *, create: bool = False) -> KeyMetadata:
        """Re-run ``mutation`` on fresh metadata until its transaction commits."""
        for _ in range(_MAX_RETRIES):
            meta, revision = await self._load(path)
            if meta is None:
                if not create:
                    raise UnsupportedPathError()
                meta = KeyMetadata()
            ops = mutation(meta)
            meta.updated_time = now_rfc3339()
            record = json.dumps(meta.to_json()).encode()
            try:
                await self._view.commit([Put(f"metadata/{path}", record, expect=revision), *ops])
            except RevisionMismatchError:
                continue
            return meta
        raise InvalidRequestError("too much contention on this key; retry the request")

    def _version_key(self, meta: KeyMetadata, version: int) -> str:
        return f"versions/{meta.data_id}/{version}"

    # -- config -----------------------------------------------------------------

    async def _read_config(self, request: Request, data: FieldData) -> Response:
        config = await self._config()
        return Response(
            data={**config, "delete_version_after": f"{config['delete_version_after']}s"}
        )

    async def _write_config(self, request: Request, data: FieldData) -> None:
        config = await self._config()
        for name in ("max_versions", "cas_required", "delete_version_after"):
            if data.given(name):
                config[name] = data.get(name)
        if config["max_versions"] < 0:
            raise InvalidRequestError("max_versions must not be negative")
        await self._view.put_json("config", config)

    # -- data -------------------------------------------------------------------

    async def _exists(self, request: Request, data: FieldData) -> bool:
        meta, _ = await self._load(data.get("path"))
        return meta is not None

    async def _read_data(self, request: Request, data: FieldData) -> Response:
        meta, _ = await self._load(data.get("path"))
        if meta is None:
            raise UnsupportedPathError()
        version = data.get("version") or meta.current_version
        if version not in meta.versions:
            raise UnsupportedPathError()
        metadata = meta.version_json(version)
        if not meta.versions[version].is_live(now_rfc3339()):
            return Response(status=404, data={"data": None, "metadata": metadata})
        body = await self._view.get_json(self._version_key(meta, version))
        return Response(data={"data": body, "metadata": metadata})

    async def _write_data(self, request: Request, data: FieldData) -> Response:
        if not data.given("data"):
            raise InvalidRequestError("no data provided")
        options = data.get("options") or {}
        cas = options.get("cas")
        if cas is not None and (isinstance(cas, bool) or not isinstance(cas, int)):
            raise InvalidRequestError("options.cas must be an integer")
        config = await self._config()
        body = json.dumps(data.get("data")).encode()
        now = now_rfc3339()

        def write(meta: KeyMetadata) -> list[TxnOp]:
            if cas is None and (config["cas_required"] or meta.cas_required):
                raise InvalidRequestError("check-and-set parameter required for this call")
            if cas is not None and cas != meta.current_version:
                raise InvalidRequestError(
                    "check-and-set parameter did not match the current version"
                )
            version = meta.current_version + 1
            info = VersionInfo(created_time=now)
            after = meta.delete_version_after or config["delete_version_after"]
            if after > 0:
                info.deletion_time = _later(now, after)
            meta.versions[version] = info
            meta.current_version = version
            meta.oldest_version = meta.oldest_version or version
            ops: list[TxnOp] = [Put(self._version_key(meta, version), body)]
            keep = meta.max_versions or config["max_versions"] or _DEFAULT_MAX_VERSIONS
            for old in sorted(meta.versions)[: max(0, len(meta.versions) - keep)]:
                del meta.versions[old]
                ops.append(Delete(self._version_key(meta, old)))
            meta.oldest_version = min(meta.versions)
            return ops

        meta = await self._mutate(data.get("path"), write, create=True)
        return Response(data=meta.version_json(meta.current_version))

    async def _delete_latest(self, request: Request, data: FieldData) -> None:
        def delete(meta: KeyMetadata) -> list[TxnOp]:
            info = meta.versions.get(meta.current_version)
            if info and not info.deletion_time:
                info.deletion_time = now_rfc3339()
            return []

        try:
            await self._mutate(data.get("path"), delete)
        except UnsupportedPathError:
            return

    async def _change_versions(
        self, data: FieldData, change: Callable[[KeyMetadata, int], list[TxnOp]]
    ) -> None:
        versions: list[int] = data.get("versions") or []
        if not versions:
            raise InvalidRequestError("No version number provided")

        def apply(meta: KeyMetadata) -> list[TxnOp]:
            ops: list[TxnOp] = []
            for version in versions:
                if version in meta.versions:
                    ops.extend(change(meta, version))
            return ops

        try:
            await self._mutate(data.get("path"), apply)
        except UnsupportedPathError:
            return

    async def _delete_versions(self, request: Request, data: FieldData) -> None:
        def soft_delete(meta: KeyMetadata, version: int) -> list[TxnOp]:
            info = meta.versions[version]
            if not info.deletion_time or info.deletion_time > now_rfc3339():
                info.deletion_time = now_rfc3339()
            return []

        await self._change_versions(data, soft_delete)

    async def _undelete_versions(self, request: Request, data: FieldData) -> None:
        def undelete(meta: KeyMetadata, version: int) -> list[TxnOp]:
            info = meta.versions[version]
            if not info.destroyed:
                info.deletion_time = ""
            return []

        await self._change_versions(data, undelete)

    async def _destroy_versions(self, request: Request, data: FieldData) -> None:
        def destroy(meta: KeyMetadata, version: int) -> list[TxnOp]:
            meta.versions[version].destroyed = True
            return [Delete(self._version_key(meta, version))]

        await self._change_versions(data, destroy)

    # -- metadata -----------------------------------------------------------------

    async def _read_metadata(self, request: Request, data: FieldData) -> Response:
        path = data.get("path")
        meta, _ = await self._load(path) if path else (None, 0)
        if meta is None:
            raise UnsupportedPathError()
        return Response(
            data={
                "versions": {
                    str(n): {
                        "created_time": v.created_time,
                        "deletion_time": v.deletion_time,
                        "destroyed": v.destroyed,
                    }
                    for n, v in sorted(meta.versions.items())
                },
                "current_version": meta.current_version,
                "oldest_version": meta.oldest_version,
                "created_time": meta.created_time,
                "updated_time": meta.updated_time,
                "max_versions": meta.max_versions,
                "cas_required": meta.cas_required,
                "delete_version_after": f"{meta.delete_version_after}s",
                "custom_metadata": meta.custom_metadata or None,
            }
        )

    async def _list_metadata(self, request: Request, data: FieldData) -> Response:
        prefix = data.get("path") or ""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        keys = await self._view.list(f"metadata/{prefix}")
        if not keys:
            raise UnsupportedPathError()
        return Response(data={"keys": keys})

    async def _delete_metadata(self, request: Request, data: FieldData) -> None:
        path = data.get("path")
        meta, revision = await self._load(path) if path else (None, 0)
        if meta is None:
            return
        ops: list[TxnOp] = [Delete(f"metadata/{path}", expect=revision)]
        ops += [Delete(self._version_key(meta, v)) for v in meta.versions]
        await self._view.commit(ops)


def _later(rfc3339: str, seconds: int) -> str:
    moment = datetime.fromisoformat(rfc3339.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
