"""Token persistence: salted-hash keys, accessors, the parent/child tree.

Layout under the store's view: ``salt``; ``id/<key>`` (the entry, where
key = HMAC-SHA256(salt, token ID)); ``accessor/<salted accessor>`` →
``{key, accessor}`` (salted as the reference does, so no accessor is a
storage key or a file name in plaintext; ``accessor/<accessor>`` written by
older versions is still read, and rewritten by ``migrate_accessors``);
``parent/<parent key>/<child key>`` (index of children, so revoking a parent
finds them without a scan). Token roles live beside it, per namespace
(``node.core.token_store.roles``).

Every request looks its token up, so decoded entries are memoised by storage
key and reused only while the stored bytes are identical (``DecodeMemo``):
any change, revocation included, local or applied from Raft, is seen at once.
A request looks its token up twice (before its body is read, ``api/preauth.py``,
and in the pipeline), so a service token's entry is also kept by token ID while
the barrier's read generation holds still: no stored value changed since it was
read, revocations and use counts included. Expiry and use counts are still
checked on every lookup.
"""

from __future__ import annotations

import hmac
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from node.barrier.view import BarrierView
from node.memo import DecodeMemo, GenerationMemo
from node.tokens.batch import BatchCodec
from node.tokens.entry import TokenEntry
from node.tokens.ids import new_accessor, new_token_id, with_namespace
from sdk import jsoncodec
from sdk.epoch_lru import MISS
from sdk.errors import InvalidRequestError, PermissionDeniedError, RevisionMismatchError
from sdk.physical import Delete, Put, TxnOp

__all__ = ["RevokeHook", "TokenStore"]

RevokeHook = Callable[[TokenEntry], Awaitable[None]]

V = TypeVar("V")

#: Decoded entries kept; each is a few hundred bytes plus its stored bytes.
_MEMO_ENTRIES = 4096

#: Token IDs whose entry is kept while nothing stored changes (see the module's note).
_RECENT_ENTRIES = 1024

#: Token IDs whose storage key is remembered. An HMAC costs a few µs (~4 % of a KV
#: read); the map holds nothing the process does not already hold (the salt).
_KEY_ENTRIES = 4096


def _keep(kept: dict[str, V], key: str, value: V, limit: int) -> None:
    """Remember ``value`` as the newest entry, dropping the oldest past ``limit``."""
    kept.pop(key, None)
    if len(kept) >= limit:
        del kept[next(iter(kept))]
    kept[key] = value


def _decode_entry(raw: bytes) -> TokenEntry | None:
    value = jsoncodec.loads(raw)
    return TokenEntry.from_json(value) if value else None


class TokenStore:
    """Creates, finds, uses, renews and revokes tokens."""

    def __init__(
        self, view: BarrierView, generation: Callable[[], int | None] | None = None
    ) -> None:
        """``generation``: the barrier's read generation (``Barrier.read_generation``);
        without it nothing is kept by token ID."""
        self._view = view
        self._generation = generation
        #: token ID -> entry of recent lookups, while the read generation holds.
        self._recent: GenerationMemo[str, TokenEntry] = GenerationMemo(_RECENT_ENTRIES)
        self._salt: bytes | None = None
        self.batch = BatchCodec(view)
        self.on_revoke: list[RevokeHook] = []
        self.on_create: list[Callable[[TokenEntry], None]] = []
        #: Shared, read-only entries (``TokenEntry`` is frozen; its lists are not changed).
        self._entries: DecodeMemo[TokenEntry | None] = DecodeMemo(_decode_entry, _MEMO_ENTRIES)
        #: token ID -> storage key under the current salt, oldest first.
        self._keys: dict[str, str] = {}

    # -- identity of tokens ---------------------------------------------------

    async def _salt_bytes(self) -> bytes:
        if self._salt is None:
            found = await self._view.get("salt")
            if found is None:
                salt = os.urandom(32)
                try:
                    await self._view.commit([Put("salt", salt, expect=0)])
                except RevisionMismatchError:
                    return await self._salt_bytes()
                self._salt = salt
            else:
                self._salt = found.value
        return self._salt

    async def hash_id(self, token_id: str) -> str:
        key = self._keys.get(token_id)
        if key is not None:
            return key
        # One-shot ``hmac.digest`` runs in C: several times cheaper than ``hmac.new``.
        key = hmac.digest(await self._salt_bytes(), token_id.encode(), "sha256").hex()
        _keep(self._keys, token_id, key, _KEY_ENTRIES)
        return key

    async def _accessor_key(self, accessor: str) -> str:
        salted = hmac.digest(await self._salt_bytes(), b"accessor:" + accessor.encode(), "sha256")
        return f"accessor/{salted.hex()}"

    def forget_cached_salt(self) -> None:
        """Drop in-memory key material and decoded entries when the barrier seals."""
        self._salt = None
        self._keys.clear()
        self.batch.forget()
        self._entries.clear()
        self._recent.clear()

    # -- creation -----------------------------------------------------------------

    async def store_new(self, entry: TokenEntry, token_id: str = "") -> tuple[str, TokenEntry]:
        """Persist a new service token; ``entry.key``/accessor are filled in here.

        In a namespace other than root the ID (a chosen one too) and the accessor
        end with ``.<namespace id>``, as in the reference.
        """
        namespace_id = entry.namespace_id
        if token_id:
            token_id = with_namespace(token_id, namespace_id)
        else:
            token_id = new_token_id(namespace_id)
        key = await self.hash_id(token_id)
        entry = entry.with_changes(
            key=key,
            accessor=entry.accessor or new_accessor(namespace_id),
            cubbyhole_id=entry.cubbyhole_id or uuid.uuid4().hex,
        )
        ops: list[TxnOp] = [
            Put(f"id/{key}", _encode(entry.to_json()), expect=0),
            Put(
                await self._accessor_key(entry.accessor),
                _encode({"key": key, "accessor": entry.accessor}),
                expect=0,
            ),
        ]
        if entry.parent:
            ops.append(Put(f"parent/{entry.parent}/{key}", b"{}"))
        try:
            await self._view.commit(ops)
        except RevisionMismatchError as exc:
            raise InvalidRequestError("a token with this ID already exists") from exc
        for hook in self.on_create:
            hook(entry)
        return token_id, entry

    async def create_root(self, display_name: str = "root") -> tuple[str, TokenEntry]:
        return await self.create_root_with_id(new_token_id(), display_name)

    async def create_root_with_id(
        self, token_id: str, display_name: str = "root"
    ) -> tuple[str, TokenEntry]:
        """A root token with a chosen ID (dev mode's ``-dev-root-token-id``)."""
        entry = TokenEntry(
            key="",
            accessor="",
            policies=["root"],
            display_name=display_name,
            creation_time=time.time(),
            path="auth/token/root",
        )
        return await self.store_new(entry, token_id)

    # -- lookup ---------------------------------------------------------------------

    async def lookup(self, token_id: str) -> TokenEntry | None:
        """The live entry for a token ID, or None (unknown, expired or used up)."""
        if not token_id:
            return None
        if self.batch.is_batch(token_id):
            entry = await self.batch.decode(token_id)
            # A batch token lives no longer than its parent (it cannot be
            # revoked on its own, so revoking the parent is how it ends).
            if entry is not None and entry.parent:
                parent = await self.get_by_key(entry.parent)
                if parent is None or parent.expired() or parent.num_uses < 0:
                    return None
        else:
            entry = await self._service_entry(token_id)
        if entry is None or entry.expired() or entry.num_uses < 0:
            return None
        return entry

    async def _service_entry(self, token_id: str) -> TokenEntry | None:
        generation = self._generation() if self._generation is not None else None
        if generation is None:
            return await self.get_by_key(await self.hash_id(token_id))
        recent = self._recent.get(token_id, generation)
        if recent is not MISS:
            return recent
        # The generation is taken before the read: a change while it runs is not kept.
        entry = await self.get_by_key(await self.hash_id(token_id))
        if entry is not None:
            self._recent.keep(token_id, generation, entry)
        return entry

    async def get_by_key(self, key: str) -> TokenEntry | None:
        """The stored entry (shared with other callers), whatever its expiry."""
        found = await self._view.get(f"id/{key}") if key else None
        return self._entries.decode(found.key, found.value) if found else None

    async def lookup_accessor(self, accessor: str) -> TokenEntry | None:
        if not accessor or "/" in accessor:
            return None
        pointer = await self._view.get_json(await self._accessor_key(accessor))
        if pointer is None:  # written before accessors were salted
            pointer = await self._view.get_json(f"accessor/{accessor}")
        entry = await self.get_by_key(pointer["key"]) if pointer else None
        if entry is None or entry.expired() or entry.num_uses < 0:
            return None
        return entry

    async def list_accessors(self) -> list[str]:
        found = []
        for name in await self._view.list("accessor/"):
            pointer = await self._view.get_json(f"accessor/{name}")
            if pointer is not None:
                found.append(str(pointer.get("accessor") or name))
        return sorted(found)

    async def migrate_accessors(self) -> int:
        """Rewrite plaintext ``accessor/<accessor>`` keys (older versions) under their
        salted names; returns how many. Idempotent, so a crash half-way is harmless."""
        moved = 0
        for name in await self._view.list("accessor/"):
            pointer = await self._view.get_json(f"accessor/{name}")
            if pointer is None or "accessor" in pointer:
                continue  # already salted
            salted = {"key": pointer["key"], "accessor": name}
            await self._view.commit(
                [Put(await self._accessor_key(name), _encode(salted)), Delete(f"accessor/{name}")]
            )
            moved += 1
        return moved

    async def accessor_namespace(self, accessor: str) -> str | None:
        """The namespace id of the token behind an accessor, whatever its expiry (None: gone)."""
        pointer = await self._view.get_json(f"accessor/{accessor}") if accessor else None
        entry = await self.get_by_key(pointer["key"]) if pointer else None
        return entry.namespace_id if entry is not None else None

    async def all_entries(self) -> list[TokenEntry]:
        entries = []
        for key in await self._view.list("id/"):
            entry = await self.get_by_key(key)
            if entry is not None:
                entries.append(entry)
        return entries

    # -- use, renew ---------------------------------------------------------------------

    async def use(self, entry: TokenEntry) -> TokenEntry:
        """Count one use of a limited-use token.

        Conditional on the stored revision, so two concurrent requests cannot
        both spend the last use. The returned entry has ``num_uses == -1``
        when this was the last use: the caller revokes it after the request.
        """
        if entry.num_uses == 0 or not entry.key:
            return entry
        while True:
            found = await self._view.get(f"id/{entry.key}")
            if found is None:
                raise _gone()
            current = self._entries.decode(found.key, found.value)
            if current is None or current.num_uses <= 0:
                raise _gone()
            left = current.num_uses - 1
            updated = current.with_changes(num_uses=left if left else -1)
            record = _encode(updated.to_json())
            try:
                await self._view.commit([Put(found.key, record, expect=found.revision)])
            except RevisionMismatchError:
                continue
            return updated

    async def save(self, entry: TokenEntry) -> None:
        await self._view.put_json(f"id/{entry.key}", entry.to_json())
        for hook in self.on_create:
            hook(entry)

    # -- revocation -------------------------------------------------------------------------

    async def children(self, key: str) -> list[str]:
        return await self._view.list(f"parent/{key}/")

    async def revoke_tree(self, entry: TokenEntry) -> int:
        """Revoke a token and, depth first, every descendant. Returns how many."""
        count = 0
        for child_key in await self.children(entry.key):
            child = await self.get_by_key(child_key)
            if child is not None:
                count += await self.revoke_tree(child)
            else:
                await self._view.delete(f"parent/{entry.key}/{child_key}")
        await self._remove(entry)
        return count + 1

    async def revoke_orphan(self, entry: TokenEntry) -> None:
        """Revoke only this token; its children become orphans."""
        for child_key in await self.children(entry.key):
            child = await self.get_by_key(child_key)
            ops: list[TxnOp] = [Delete(f"parent/{entry.key}/{child_key}")]
            if child is not None:
                ops.append(Put(f"id/{child_key}", _encode(child.with_changes(parent="").to_json())))
            await self._view.commit(ops)
        await self._remove(entry)

    async def _remove(self, entry: TokenEntry) -> None:
        if not entry.key:
            return
        for hook in self.on_revoke:
            await hook(entry)
        ops: list[TxnOp] = [
            Delete(f"id/{entry.key}"),
            Delete(await self._accessor_key(entry.accessor)),
        ]
        if "/" not in entry.accessor:  # a plaintext key an older version may have left
            ops.append(Delete(f"accessor/{entry.accessor}"))
        if entry.parent:
            ops.append(Delete(f"parent/{entry.parent}/{entry.key}"))
        await self._view.commit(ops)
        # Not needed for correctness (the record is gone), only to free the memory.
        self._entries.forget(f"id/{entry.key}")

    async def revoke(self, token_id: str) -> None:
        entry = await self.get_by_key(await self.hash_id(token_id))
        if entry is not None:
            await self.revoke_tree(entry)


def _encode(value: Any) -> bytes:
    return jsoncodec.dumps(value)


def _gone() -> Exception:
    return PermissionDeniedError()
