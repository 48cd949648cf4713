"""Storage of one KV v2 mount: ``config``, ``metadata/<path>``, ``versions/<data_id>/<n>``.

Every change to a key is one transaction conditioned on the revision of the
key's metadata record, so concurrent writers retry instead of both winning:
each version number is handed out exactly once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from node.barrier.barrier import StoredValue
from node.barrier.view import BarrierView
from node.engines.kv.records import KeyMetadata, MountConfig
from node.logical.response import Response
from node.memo import DecodeMemo, GenerationMemo
from sdk import jsoncodec
from sdk.epoch_lru import MISS
from sdk.errors import (
    InvalidRequestError,
    RevisionMismatchError,
    StorageError,
    UnsupportedPathError,
)
from sdk.physical import Delete, Put, TxnOp

__all__ = ["Abort", "KVStore", "Mutation", "valid_key"]

_MAX_RETRIES = 100

#: Changes one key's metadata in place and returns the other ops of its transaction.
Mutation = Callable[[KeyMetadata], Awaitable[list[TxnOp]]]

#: A key's decoded metadata and the stored record it came from (both None if absent).
Loaded = tuple[KeyMetadata | None, StoredValue | None]


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
    if "\x00" in path:
        return False
    # Only a path with a dot can have a "." or ".." segment (asked ~3 times a write).
    return "." not in path or not any(p in (".", "..") for p in path.split("/"))


def _unchanged(
    record: bytes, after: dict[str, Any], found: StoredValue | None, stored: KeyMetadata | None
) -> bool:
    """Whether a mutation left the stored record as it was: the same bytes,
    or else an equal record (e.g. only the order of custom_metadata moved)."""
    if found is None or stored is None:
        return False
    return record == found.value or after == stored.to_json()


def _decode_metadata(raw: bytes) -> KeyMetadata:
    return KeyMetadata.from_json(jsoncodec.loads(raw))


def _decode_body(raw: bytes) -> Any:
    return jsoncodec.loads(raw)


def _decode_config(raw: bytes) -> MountConfig:
    return MountConfig.from_json(jsoncodec.loads(raw))


#: Reads (metadata, version bodies) kept while nothing stored changes: at least a
#: working set of hot secrets; each entry is shared with the decode memos.
_READS_KEPT = 4096


class KVStore:
    """Records decoded from storage are shared (see ``DecodeMemo``) and never
    mutated: ``mutate`` works on a copy. The memos live as long as the mount's
    backend, which the router drops on seal.

    What a read (``load``, ``version_data``) found is also kept while the
    barrier's read generation holds still (``GenerationMemo``), so a read of a
    key read before, with no write in between, skips storage entirely.
    ``mutate`` reads storage, since its transaction is conditioned on what it
    read; only its first attempt may take what the existence probe before it
    (``exists``) just read, if nothing stored changed in between.
    """

    def __init__(self, view: BarrierView) -> None:
        self.view = view
        self._metadata: DecodeMemo[KeyMetadata] = DecodeMemo(_decode_metadata)
        self._bodies: DecodeMemo[Any] = DecodeMemo(_decode_body)
        self._loaded: GenerationMemo[str, tuple[KeyMetadata | None, int]] = GenerationMemo(
            _READS_KEPT
        )
        self._versions: GenerationMemo[str, dict[str, Any]] = GenerationMemo(_READS_KEPT)
        #: The last existence probe: (path, read generation, what it read).
        self._probed: tuple[str, int, Loaded] | None = None
        self._config: DecodeMemo[MountConfig] = DecodeMemo(_decode_config, capacity=1)

    async def config(self) -> MountConfig:
        """The mount's settings (shared while the stored record is unchanged: read
        them, do not change them; ``update_config`` decodes its own copy). Every
        write reads them."""
        found = await self.view.get("config")
        return self._config.decode(found.key, found.value) if found else MountConfig()

    async def update_config(self, change: Callable[[MountConfig], None]) -> None:
        """Read-modify-write of ``config`` conditioned on its revision, so two
        writers setting different fields do not undo each other."""
        for _ in range(_MAX_RETRIES):
            found = await self.view.get("config")
            config = MountConfig.from_json(jsoncodec.loads(found.value) if found else None)
            change(config)
            record = jsoncodec.dumps(config.to_json())
            try:
                await self.view.commit(
                    [Put("config", record, expect=found.revision if found else 0)]
                )
            except RevisionMismatchError:
                continue
            return
        raise InvalidRequestError("too much contention on the config; retry the request")

    async def load(self, path: str) -> tuple[KeyMetadata | None, int]:
        """The key's metadata (shared: read it, do not change it) and its revision."""
        generation = self.view.read_generation()  # before the read: see GenerationMemo
        kept = self._loaded.get(path, generation)
        if kept is not MISS:
            return kept
        meta, found = await self._load(path)
        loaded = meta, found.revision if found else 0
        self._loaded.keep(path, generation, loaded)
        return loaded

    async def exists(self, path: str) -> bool:
        """Whether the key has metadata: the existence probe before every write.
        Nothing is kept for later reads (the write moves the generation at once);
        the write itself may take what it read (``_take_probed``)."""
        generation = self.view.read_generation()
        loaded = await self._load(path)
        self._probed = (path, generation, loaded) if generation is not None else None
        return loaded[0] is not None

    def _take_probed(self, path: str) -> Loaded | None:
        """What the probe of ``path`` read, if nothing stored changed since it began
        (the pipeline runs the write right after it; another request's probe
        in between replaces it). Taken once: a retry reads storage."""
        probed, self._probed = self._probed, None
        if probed is None or probed[0] != path or probed[1] != self.view.read_generation():
            return None
        return probed[2]

    async def _load(self, path: str) -> Loaded:
        found = await self.view.get(f"metadata/{path}") if valid_key(path) else None
        if found is None:
            return None, None
        return self._metadata.decode(found.key, found.value), found

    def version_key(self, meta: KeyMetadata, version: int) -> str:
        return f"versions/{meta.data_id}/{version}"

    async def version_data(self, meta: KeyMetadata, version: int) -> dict[str, Any]:
        """A version's body, shared with other readers: never change it (``merge_patch``
        and the response encoders only read it)."""
        key = self.version_key(meta, version)
        generation = self.view.read_generation()
        kept = self._versions.get(key, generation)
        if kept is not MISS:
            return kept
        found = await self.view.get(key)
        body = self._bodies.decode(found.key, found.value) if found else None
        if not isinstance(body, dict):
            raise StorageError("could not find version data")
        self._versions.keep(key, generation, body)
        return body

    async def mutate(self, path: str, mutation: Mutation, *, create: bool = False) -> KeyMetadata:
        """Re-run ``mutation`` on fresh metadata until its transaction commits.

        Without ``create`` a missing key is a 404. A mutation that changes
        nothing commits nothing.
        """
        if create and not valid_key(path):
            raise InvalidRequestError(f"invalid secret path {path!r}")
        key = f"metadata/{path}"
        probed = self._take_probed(path)
        for _ in range(_MAX_RETRIES):
            stored, found = probed or await self._load(path)
            probed = None
            if stored is None or found is None:
                if not create:
                    raise UnsupportedPathError()
                meta, revision = KeyMetadata(), 0
            else:
                meta, revision = stored.copy(), found.revision
            ops = await mutation(meta)
            after = meta.to_json()
            record = jsoncodec.dumps(after)
            if not ops and revision and _unchanged(record, after, found, stored):
                return meta
            try:
                await self.view.commit([Put(key, record, expect=revision), *ops])
            except RevisionMismatchError:
                continue
            # ``record`` decodes to ``meta``; callers only read it from here on.
            self._metadata.remember(key, record, meta)
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
