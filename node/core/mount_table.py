"""The one owner of the mount lifecycle: the persisted tables and the routed backends.

Each namespace keeps two lists in the barrier under its own prefix
(``[namespaces/<id>/]core/mounts`` and ``.../core/auth``). A change rewrites
the namespace's table under a lock, so two concurrent changes cannot
silently overwrite each other.

Every way a backend comes or goes passes through here: load at unseal,
mount, unmount, remount, tune, seal, and the writes another node made
(``reconcile`` for a changed table, ``invalidate_keys`` for the keys under a
mount's storage, called by ``node.core.replicated``). So backends see one lifecycle:
built and ``setup`` by the catalog, ``initialize`` once routed,
``invalidate(key)`` on a replicated change, ``cleanup`` once unrouted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from node.barrier.view import BarrierView
from node.core.catalog import Catalog
from node.logical.backend import Backend
from node.logical.mount import MountEntry, new_mount, normalise_path
from node.namespaces.model import ROOT, Namespace
from sdk.errors import InvalidRequestError
from sdk.physical import Delete

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["MountTable", "default_auth_mounts", "default_mounts"]

log = logging.getLogger("coffer.core.mounts")

_TABLE_KEYS = {"secret": "mounts", "auth": "auth"}
_TABLES_UNDER = "core/"
#: Mounts every namespace has, created with it; they cannot be moved or removed.
_PINNED = {
    ("secret", "sys/"),
    ("secret", "cubbyhole/"),
    ("secret", "identity/"),
    ("auth", "token/"),
}
_RESERVED_SECRET_PREFIXES = ("sys/", "auth/", "cubbyhole/", "identity/")


def default_mounts(namespace: Namespace = ROOT) -> list[MountEntry]:
    """As the reference: sys, cubbyhole and identity everywhere; ``secret/`` (KV v2) in root."""
    where = {"namespace_id": namespace.id, "namespace_path": namespace.path}
    mounts = [
        new_mount(
            "sys/",
            "system",
            description="system endpoints used for control, policy and debugging",
            **where,
        ),
        new_mount(
            "cubbyhole/",
            "cubbyhole",
            description="per-token private secret storage",
            local=True,
            **where,
        ),
        new_mount("identity/", "identity", description="identity store", **where),
    ]
    if namespace.is_root:
        mounts.append(
            new_mount(
                "secret/",
                "kv",
                description="key/value secret storage",
                options={"version": "2"},
                **where,
            )
        )
    return mounts


def default_auth_mounts(namespace: Namespace = ROOT) -> list[MountEntry]:
    return [
        new_mount(
            "token/",
            "token",
            description="token based credentials",
            table="auth",
            namespace_id=namespace.id,
            namespace_path=namespace.path,
        )
    ]


_DEFAULTS = {"secret": default_mounts, "auth": default_auth_mounts}


class MountTable:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._catalog = Catalog(core)
        self._lock = asyncio.Lock()

    def _view(self, namespace: Namespace) -> BarrierView:
        return BarrierView(self._core.barrier, namespace.storage_prefix + _TABLES_UNDER)

    # -- routing backends (every mount and unmount goes through these) -------------------

    def _mount(self, entry: MountEntry) -> Backend:
        """Build and route ``entry``'s backend; the caller awaits its ``initialize``."""
        backend = self._catalog.build(entry)
        self._core.router.mount(entry, backend)
        return backend

    async def _attach(self, entry: MountEntry) -> None:
        await self._mount(entry).initialize()

    async def _detach(self, route_path: str) -> None:
        backend = self._core.router.unmount(route_path)
        if backend is not None:
            await self._cleanup(backend)

    @staticmethod
    async def _cleanup(backend: Backend) -> None:
        try:
            await backend.cleanup()
        except Exception:  # unrouted either way: a failed cleanup must not stop a seal
            log.exception("backend cleanup failed", extra={"event": "mount.cleanup_failed"})

    # -- load and unload -------------------------------------------------------------------

    async def load(self) -> None:
        """Mount every namespace's tables (creating their defaults once)."""
        await self.unload_all()
        for namespace in self._core.namespaces.all():
            await self.load_namespace(namespace)

    async def load_namespace(self, namespace: Namespace) -> None:
        for table in ("secret", "auth"):
            raw: list[dict[str, Any]] | None = await self._view(namespace).get_json(
                _TABLE_KEYS[table]
            )
            if raw is None:
                entries = _DEFAULTS[table](namespace)
                await self._save(namespace, table, entries)
            else:
                entries = [MountEntry.from_json(item) for item in raw]
                # Tables written before a default mount existed gain it once.
                present = {e.path for e in entries}
                missing = [
                    e
                    for e in _DEFAULTS[table](namespace)
                    if e.path not in present and (table, e.path) in _PINNED
                ]
                if missing:
                    entries += missing
                    await self._save(namespace, table, entries)
            for entry in entries:
                await self._attach(entry)

    async def unload_namespace(self, namespace_id: str) -> None:
        for entry in self._core.router.entries():
            if entry.namespace_id == namespace_id:
                await self._detach(entry.route_path)

    async def unload_all(self) -> None:
        """Unroute every backend (seal), each cleaned up."""
        for entry in self._core.router.entries():
            await self._detach(entry.route_path)

    # -- writes another node made (``node.core.replicated``) -----------------------------

    @staticmethod
    def table_owner(key: str) -> str | None:
        """The id of the namespace whose mount table ``key`` is, else ``None``."""
        prefix, found, name = key.rpartition(_TABLES_UNDER)
        if not found or name not in _TABLE_KEYS.values():
            return None
        if not prefix:
            return ROOT.id
        head, _, namespace_id = prefix.rstrip("/").partition("/")
        if head != "namespaces" or not namespace_id or "/" in namespace_id:
            return None
        return namespace_id

    async def reconcile(self, namespace: Namespace) -> None:
        """Make the routed backends match the stored tables.

        Compares before it changes anything: an unchanged mount keeps its
        backend instance (the active node sees its own writes come back too);
        a changed or removed one is cleaned up, a new or changed one attached.
        """
        async with self._lock:  # never interleave with a local mount change
            for table, key in _TABLE_KEYS.items():
                raw = await self._view(namespace).get_json(key)
                if raw is None:
                    continue  # not written yet; the write will come through here
                wanted = {e.route_path: e for e in (MountEntry.from_json(item) for item in raw)}
                current = {
                    e.route_path: e
                    for e in self._core.router.entries()
                    if e.namespace_id == namespace.id and e.table == table
                }
                for path, entry in current.items():
                    if wanted.get(path) != entry:
                        await self._detach(path)
                for path, entry in wanted.items():
                    if current.get(path) != entry:
                        await self._attach(entry)

    def invalidate(self, key: str) -> bool:
        """Tell the backend whose storage holds ``key`` (a barrier key) that it changed.

        Returns whether a mount owns the key.
        """
        return not self.invalidate_keys((key,))

    def invalidate_keys(self, keys: Iterable[str]) -> list[str]:
        """:meth:`invalidate` each of ``keys``; those no mount owns, in order."""
        owner_of = self._core.router.storage_owners().owner_of
        others = []
        for key in keys:
            owner = owner_of(key)
            if owner is None:
                others.append(key)
            else:
                owner[0].invalidate(owner[1])
        return others

    def invalidate_all(self) -> None:
        """Anything may have changed (a snapshot restore): every backend drops its caches."""
        for _, backend in self._core.router.mounted():
            backend.invalidate("")

    # -- the tables -------------------------------------------------------------------------

    async def _save(self, namespace: Namespace, table: str, entries: list[MountEntry]) -> None:
        await self._view(namespace).put_json(_TABLE_KEYS[table], [e.to_json() for e in entries])

    async def _save_current(self, namespace: Namespace, table: str) -> None:
        await self._save(namespace, table, self.entries(table, namespace))

    def entries(self, table: str = "secret", namespace: Namespace = ROOT) -> list[MountEntry]:
        return sorted(
            (
                e
                for e in self._core.router.entries()
                if e.table == table and e.namespace_id == namespace.id
            ),
            key=lambda e: e.path,
        )

    def find(self, table: str, path: str, namespace: Namespace = ROOT) -> MountEntry:
        path = normalise_path(path)
        for entry in self.entries(table, namespace):
            if entry.path == path:
                return entry
        kind = "auth method" if table == "auth" else "secrets engine"
        raise InvalidRequestError(f"no {kind} mounted at {path}")

    def _check_free(self, entry: MountEntry) -> None:
        if entry.table == "secret" and entry.path.startswith(_RESERVED_SECRET_PREFIXES):
            raise InvalidRequestError(f"cannot mount at reserved path {entry.path!r}")
        for existing in self._core.router.entries():
            a, b = existing.route_path, entry.route_path
            if a.startswith(b) or b.startswith(a):
                raise InvalidRequestError(f"path is already in use at {existing.route_path}")
        owner = self._core.namespaces.by_id(entry.namespace_id) or ROOT
        for namespace in self._core.namespaces.all():
            if namespace.contains(owner):
                continue  # the mount's own namespace or an ancestor: its path is a prefix
            if namespace.path.startswith(entry.route_path) or entry.route_path.startswith(
                namespace.path
            ):
                raise InvalidRequestError(f"path is already in use by namespace {namespace.path}")

    async def enable(self, entry: MountEntry) -> None:
        async with self._lock:
            self._check_free(entry)
            await self._attach(entry)
            await self._save_current(self._namespace_of(entry), entry.table)

    def _namespace_of(self, entry: MountEntry) -> Namespace:
        namespace = self._core.namespaces.by_id(entry.namespace_id)
        if namespace is None:
            raise InvalidRequestError("the mount's namespace no longer exists")
        return namespace

    async def disable(self, table: str, path: str, namespace: Namespace = ROOT) -> None:
        """Unmount and delete every stored value of the mount."""
        async with self._lock:
            entry = self.find(table, path, namespace)
            if (table, entry.path) in _PINNED:
                raise InvalidRequestError(f"cannot unmount {entry.path!r}")
            await self._detach(entry.route_path)
            await self._save_current(namespace, table)
            await delete_prefix(BarrierView(self._core.barrier, entry.storage_prefix))

    async def tune(
        self, table: str, path: str, namespace: Namespace = ROOT, **changes: Any
    ) -> MountEntry:
        async with self._lock:
            entry = self.find(table, path, namespace)
            tuned = entry.with_changes(**changes)
            await self._detach(entry.route_path)
            await self._attach(tuned)
            await self._save_current(namespace, table)
            return tuned

    async def remount(
        self, table: str, source: str, target: str, namespace: Namespace = ROOT
    ) -> MountEntry:
        """Move a mount; its data stays where it is (keyed by uuid, not path)."""
        async with self._lock:
            entry = self.find(table, source, namespace)
            if (table, entry.path) in _PINNED:
                raise InvalidRequestError(f"cannot remount {entry.path!r}")
            moved = entry.with_changes(path=normalise_path(target))
            backend = self._core.router.unmount(entry.route_path)
            try:
                self._check_free(moved)
            except InvalidRequestError:
                if backend is not None:
                    self._core.router.mount(entry, backend)  # put back as it was
                raise
            if backend is not None:
                await self._cleanup(backend)
            await self._attach(moved)
            await self._save_current(namespace, table)
            return moved


async def delete_prefix(view: BarrierView) -> None:
    """Delete every key under a view, in bounded transactions."""
    keys = await view.list_recursive()
    for start in range(0, len(keys), 256):
        await view.commit([Delete(key) for key in keys[start : start + 256]])
