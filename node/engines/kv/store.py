"""Storage of one KV v2 mount: ``config``, ``metadata/<path>``, ``versions/<data_id>/<n>``.

Every change to a key is one transaction conditioned on the revision of the
key's metadata record, so concurrent writers retry instead of both winning:
each version number is handed out exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from node.barrier.view import BarrierView
from node.engines.kv.records import KeyMetadata, MountConfig
from node.errors import (
    InvalidRequestError,
    RevisionMismatchError,
    StorageError,
    UnsupportedPathError,
)
from node.logical.response import Response
from node.physical.base import Delete, Put, TxnOp

__all__ = ["Abort", "KVStore", "Mutation", "valid_key"]

_MAX_RETRIES = 100

#: Changes one key's metadata in place and returns the other ops of its transaction.
Mutation = Callable[[KeyMetadata], Awaitable[list[TxnOp]]]


class Abort(Exception):
    """Ends a mutation without committing and answers with ``response``
    (e.g. a 404 that still carries the version metadata)."""

    def __init__(self, response: Response) -> None:
        super().__init__("mutation aborted")
        self.response = response


def valid_key(path: str) -> bool:
    """Whether ``path`` can name a secret: storage refuses the rest, so reads of
    such paths are simply not found and writes are rejected up front."""
    if not path or path.startswith("/") or path.endswith("/") or "//" in path:
        return False
    return "\x00" not in path and not any(p in (".", "..") for p in path.split("/"))


class KVStore:
    def __init__(self, view: BarrierView) -> None:
        self.view = view

    async def config(self) -> MountConfig:
        return MountConfig.from_json(await self.view.get_json("config"))

    async def update_config(self, change: Callable[[MountConfig], None]) -> None:
        """Read-modify-write of ``config`` conditioned on its revision, so two
        writers setting different fields do not undo each other."""
        for _ in range(_MAX_RETRIES):
            found = await self.view.get("config")
            config = MountConfig.from_json(json.loads(found.value) if found else None)
            change(config)
            record = json.dumps(config.to_json()).encode()
            try:
                await self.view.commit(
                    [Put("config", record, expect=found.revision if found else 0)]
                )
            except RevisionMismatchError:
                continue
            return
        raise InvalidRequestError("too much contention on the config; retry the request")

    async def load(self, path: str) -> tuple[KeyMetadata | None, int]:
        found = await self.view.get(f"metadata/{path}") if valid_key(path) else None
        if found is None:
            return None, 0
        return KeyMetadata.from_json(json.loads(found.value)), found.revision

    def version_key(self, meta: KeyMetadata, version: int) -> str:
        return f"versions/{meta.data_id}/{version}"

    async def version_data(self, meta: KeyMetadata, version: int) -> dict[str, Any]:
        body = await self.view.get_json(self.version_key(meta, version))
        if not isinstance(body, dict):
            raise StorageError("could not find version data")
        return body

    async def mutate(self, path: str, mutation: Mutation, *, create: bool = False) -> KeyMetadata:
        """Re-run ``mutation`` on fresh metadata until its transaction commits.

        Without ``create`` a missing key is a 404. A mutation that changes
        nothing commits nothing.
        """
        if create and not valid_key(path):
            raise InvalidRequestError(f"invalid secret path {path!r}")
        for _ in range(_MAX_RETRIES):
            meta, revision = await self.load(path)
            if meta is None:
                if not create:
                    raise UnsupportedPathError()
                meta = KeyMetadata()
            before = meta.to_json() if revision else None
            ops = await mutation(meta)
            after = meta.to_json()
            if not ops and after == before:
                return meta
            record = json.dumps(after).encode()
            try:
                await self.view.commit([Put(f"metadata/{path}", record, expect=revision), *ops])
            except RevisionMismatchError:
                continue
            return meta
        raise InvalidRequestError("too much contention on this key; retry the request")

    async def remove(self, path: str) -> None:
        """Delete the metadata and every version body in one transaction."""
        for _ in range(_MAX_RETRIES):
            meta, revision = await self.load(path)
            if meta is None:
                return
            ops: list[TxnOp] = [Delete(f"metadata/{path}", expect=revision)]
            ops += [Delete(self.version_key(meta, v)) for v in meta.versions]
            try:
                await self.view.commit(ops)
            except RevisionMismatchError:
                continue
            return
        raise InvalidRequestError("too much contention on this key; retry the request")
