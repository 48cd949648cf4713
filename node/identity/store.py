"""Persistence of one namespace's identity records under a barrier view.

Layout (relative to the view)::

    entity/<id>                                   entity record (JSON)
    entity-name/<name>                            -> entity id
    alias/<id>                                    entity alias record
    alias-by-factors/<mount accessor>/<name>      -> alias id
    group/<id>                                    group record
    group-name/<name>                             -> group id
    group-alias/<id>                              group alias record
    group-alias-by-factors/<mount accessor>/<name> -> group alias id

Names in index keys are lower-cased and percent-encoded. Every change is one
transaction: records are written with the revision they were read at, and
index keys are created with ``expect=0``, so two writers (coroutines or
nodes) can never both create the same name or alias; the loser's commit fails,
its cache is dropped, and ``run`` retries the operation against fresh data.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from node.barrier.view import BarrierView
from node.identity.records import Entity, EntityAlias, Group, GroupAlias, Record
from node.identity.state import IdentityState, index_keys, record_key
from sdk.errors import RevisionMismatchError
from sdk.physical import Delete, Put, TxnOp

__all__ = ["IdentityStore"]

T = TypeVar("T")
log = logging.getLogger("coffer.identity")

_ATTEMPTS = 12
_LOADERS: tuple[tuple[str, Callable[[dict[str, object]], Record]], ...] = (
    ("entity/", Entity.from_json),
    ("alias/", EntityAlias.from_json),
    ("group/", Group.from_json),
    ("group-alias/", GroupAlias.from_json),
)


class IdentityStore:
    """One namespace's identity: a cached ``IdentityState`` and conditional writes."""

    def __init__(self, view: BarrierView, namespace_id: str) -> None:
        self.view = view
        self.namespace_id = namespace_id
        #: Bumped on every change and invalidation; lets callers notice staleness.
        self.generation = 0
        self._state: IdentityState | None = None
        self._load_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()

    def invalidate(self) -> None:
        """Forget the cache (another node changed identity data); the next read reloads."""
        self._state = None
        self.generation += 1

    async def state(self) -> IdentityState:
        """The current records, loading them from storage when not cached."""
        while True:
            state = self._state
            if state is not None:
                return state
            async with self._load_lock:
                if self._state is not None:
                    continue
                generation = self.generation
                loaded = await self._load()
                if generation == self.generation:
                    self._state = loaded
                    return loaded

    async def run(self, operation: Callable[[IdentityState], Awaitable[T]]) -> T:
        """Run a read-validate-commit ``operation``, retrying it on a revision conflict.

        Local writers are serialised by a lock; writers on other nodes are
        caught by the revision checks of ``commit``. ``operation`` must only
        change storage through ``commit`` and must be safe to run again.
        """
        for attempt in range(_ATTEMPTS):
            async with self._write_lock:
                state = await self.state()
                try:
                    return await operation(state)
                except RevisionMismatchError as error:
                    if attempt == _ATTEMPTS - 1:
                        raise
                    log.debug("identity write conflict, retrying", extra={"key": error.key})
            await asyncio.sleep(0)
        raise AssertionError("unreachable")

    async def commit(self, puts: Sequence[Record] = (), deletes: Sequence[Record] = ()) -> None:
        """Write ``puts`` and remove ``deletes`` (records as cached) atomically.

        Call only from an operation given to ``run``. Raises
        ``RevisionMismatchError`` (after dropping the cache) when storage
        changed since the records were read or a name is already taken.
        """
        state = await self.state()
        ops: list[TxnOp] = []
        added: dict[str, str] = {}
        removed: set[str] = set()
        for record in puts:
            key = record_key(record)
            old = state.get(record.kind, record.id)
            body = json.dumps(record.to_json(), separators=(",", ":")).encode()
            ops.append(Put(key, body, expect=state.revisions.get(key, 0)))
            new_index = index_keys(record)
            old_index = index_keys(old) if old is not None else {}
            added.update({k: v for k, v in new_index.items() if k not in old_index})
            removed.update(k for k in old_index if k not in new_index)
        for record in deletes:
            cached = state.get(record.kind, record.id)
            if cached is None:
                continue
            key = record_key(cached)
            ops.append(Delete(key, expect=state.revisions[key]))
            removed.update(index_keys(cached))
        ops.extend(await self._index_ops(added, removed))
        if not ops:
            return
        try:
            revision = await self.view.commit(ops)
        except RevisionMismatchError:
            self.invalidate()
            raise
        for record in deletes:
            state.remove(record.id, record.kind)
        for record in puts:
            state.put(record, revision)
        self.generation += 1

    async def _index_ops(self, added: dict[str, str], removed: set[str]) -> list[TxnOp]:
        ops: list[TxnOp] = []
        for key in sorted(removed | set(added)):
            if key not in removed:
                ops.append(Put(key, added[key].encode(), expect=0))  # must not exist yet
                continue
            # A freed key is ours while our record is current, and the record's
            # own revision check aborts the commit if it is not.
            found = await self.view.get(key)
            current = found.revision if found is not None else 0
            if key in added:
                ops.append(Put(key, added[key].encode(), expect=current))
            elif found is not None:
                ops.append(Delete(key, expect=current))
        return ops

    async def _load(self) -> IdentityState:
        state = IdentityState()
        for prefix, decode in _LOADERS:
            for name in await self.view.list(prefix):
                if name.endswith("/"):
                    continue
                found = await self.view.get(prefix + name)
                if found is not None:
                    state.put(decode(json.loads(found.value)), found.revision)
        return state
