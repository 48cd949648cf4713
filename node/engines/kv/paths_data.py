"""``data/:path`` (read, write, merge-patch, soft-delete) and ``subkeys/:path``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from node.engines.kv.records import KeyMetadata, MountConfig, deletion_time, now_rfc3339
from node.engines.kv.store import Abort, KVStore
from node.engines.kv.transform import merge_patch, subkeys
from node.framework import Field, FieldData, FieldType, Path
from node.framework.fields import to_int
from node.logical.request import Operation, Request
from node.logical.response import Response
from sdk import jsoncodec
from sdk.errors import InvalidRequestError, UnsupportedPathError
from sdk.physical import Delete, Put, TxnOp

__all__ = ["PATH_FIELD", "DataPaths"]

PATH_FIELD = Field(FieldType.STRING, "Location of the secret.")

_DATA_HELP = """\
Each write (POST/PUT) stores `data` as a new version; earlier versions are kept
up to max_versions. `options.cas` makes the write check-and-set: 0 means the key
must not exist yet, N means the current version must be N.

PATCH (Content-Type: application/merge-patch+json) applies `data` as a JSON
merge patch (RFC 7386) to the current version and stores the result as a new
version; the current version must exist and be neither deleted nor destroyed.

GET returns the current version, or `?version=N`. A deleted or destroyed
version answers 404 with its metadata. DELETE soft-deletes the current version;
undelete/ reverses it."""

_SUBKEYS_HELP = """\
Returns the structure of a version with every value replaced by null, so a
client can see which keys exist without being able to read them. `depth` limits
how many levels of nested objects are shown (0 = all); deeper objects are null."""


def _cas(data: FieldData) -> int | None:
    """``options.cas`` as the reference decodes it (numbers or numeric strings)."""
    raw = (data.get("options") or {}).get("cas")
    if raw is None:
        return None
    try:
        return to_int(raw, "options.cas")
    except InvalidRequestError:
        raise InvalidRequestError("error parsing check-and-set parameter") from None


def _check_cas(cas: int | None, config: MountConfig, meta: KeyMetadata) -> None:
    if cas is None:
        if config.cas_required or meta.cas_required:
            raise InvalidRequestError("check-and-set parameter required for this call")
    elif cas != meta.current_version:
        raise InvalidRequestError("check-and-set parameter did not match the current version")


def _non_negative(data: FieldData, name: str) -> int:
    value: int = data.get(name)
    if value < 0:
        raise InvalidRequestError(f"{name} must not be negative")
    return value


class DataPaths:
    """Handlers that create, read or hide version bodies of one mount."""

    def __init__(self, store: KVStore) -> None:
        self._store = store

    def paths(self) -> list[Path]:
        version = Field(FieldType.INT, "Version to read; 0 or absent means the current one.", 0)
        return [
            Path(
                r"data/(?P<path>.+)",
                operations={
                    Operation.READ: self._read,
                    Operation.UPDATE: self._write,
                    Operation.PATCH: self._patch,
                    Operation.DELETE: self._delete_latest,
                },
                fields={
                    "path": PATH_FIELD,
                    "data": Field(FieldType.MAP, "The secret's key-value pairs (or merge patch)."),
                    "options": Field(
                        FieldType.MAP,
                        "Write options. 'cas': check-and-set version (0 = key must not exist).",
                    ),
                    "version": version,
                },
                exists=self._exists,
                summary="Write, patch, read or soft-delete the data of a versioned secret.",
                description=_DATA_HELP,
            ),
            Path(
                r"subkeys/(?P<path>.+)",
                operations={Operation.READ: self._subkeys},
                fields={
                    "path": PATH_FIELD,
                    "version": version,
                    "depth": Field(FieldType.INT, "Deepest level of keys to show (0 = all).", 0),
                },
                summary="Read the key structure of a secret without its values.",
                description=_SUBKEYS_HELP,
            ),
        ]

    async def _exists(self, request: Request, data: FieldData) -> bool:
        return await self._store.exists(data.get("path"))

    async def _version(self, data: FieldData) -> tuple[KeyMetadata, int, bool]:
        """The requested version and whether it is live; 404 when there is none."""
        wanted = _non_negative(data, "version")
        meta, _ = await self._store.load(data.get("path"))
        version = wanted or (meta.current_version if meta else 0)
        if meta is None or version not in meta.versions:
            raise UnsupportedPathError()
        return meta, version, meta.versions[version].is_live()

    async def _read(self, request: Request, data: FieldData) -> Response:
        meta, version, live = await self._version(data)
        body = await self._store.version_data(meta, version) if live else None
        return Response(
            status=None if live else 404,
            data={"data": body, "metadata": meta.version_json(version)},
        )

    async def _subkeys(self, request: Request, data: FieldData) -> Response:
        depth = _non_negative(data, "depth")
        meta, version, live = await self._version(data)
        body = await self._store.version_data(meta, version) if live else None
        return Response(
            status=None if live else 404,
            data={
                "subkeys": subkeys(body, depth) if body is not None else None,
                "metadata": meta.version_json(version),
            },
        )

    def _add_version(self, meta: KeyMetadata, config: MountConfig, body: Any) -> list[TxnOp]:
        now = now_rfc3339()
        expires = deletion_time(now, config, meta.delete_version_after)
        pruned = meta.add_version(now, expires, config)
        encoded = jsoncodec.dumps(body)
        ops: list[TxnOp] = [Put(self._store.version_key(meta, meta.current_version), encoded)]
        return ops + [Delete(self._store.version_key(meta, old)) for old in pruned]

    async def _write(self, request: Request, data: FieldData) -> Response:
        if not data.given("data"):
            raise InvalidRequestError("no data provided")
        cas, body = _cas(data), data.get("data")
        config = await self._store.config()

        async def write(meta: KeyMetadata) -> list[TxnOp]:
            _check_cas(cas, config, meta)
            return self._add_version(meta, config, body)

        meta = await self._store.mutate(data.get("path"), write, create=True)
        return Response(data=meta.version_json(meta.current_version))

    async def _patch(self, request: Request, data: FieldData) -> Response:
        """Merge-patch the current version into a new one, inside the same retried
        transaction as a write, so concurrent patches each see the previous result."""
        if not data.get("data"):
            raise InvalidRequestError("no data provided")
        cas, patch = _cas(data), data.get("data")
        config = await self._store.config()

        async def apply(meta: KeyMetadata) -> list[TxnOp]:
            _check_cas(cas, config, meta)
            current = meta.versions.get(meta.current_version)
            if current is None:
                raise UnsupportedPathError()
            if not current.is_live():
                body = meta.version_json(meta.current_version)
                raise Abort(Response(status=404, data=body))
            existing = await self._store.version_data(meta, meta.current_version)
            return self._add_version(meta, config, merge_patch(existing, patch))

        try:
            meta = await self._store.mutate(data.get("path"), apply)
        except Abort as abort:
            return abort.response
        return Response(data=meta.version_json(meta.current_version))

    async def _delete_latest(self, request: Request, data: FieldData) -> None:
        async def delete(meta: KeyMetadata) -> list[TxnOp]:
            now = now_rfc3339()
            info = meta.versions.get(meta.current_version)
            if info is not None and info.is_live(now):
                meta.versions[meta.current_version] = replace(info, deletion_time=now)
            return []

        try:
            await self._store.mutate(data.get("path"), delete)
        except UnsupportedPathError:
            return
