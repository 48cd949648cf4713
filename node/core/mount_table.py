"""The persisted mount tables (engines and auth methods) and their backends.

Both tables live in the barrier (``core/mounts``, ``core/auth``). A change
is one conditional write of the whole table, so two concurrent changes
cannot silently overwrite each other.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from node.barrier.view import BarrierView
from node.engines.registry import build_backend
from node.errors import InvalidRequestError
from node.physical.base import Delete
from node.routing.mounts import MountEntry, new_mount, normalise_path

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["MountTable", "default_auth_mounts", "default_mounts"]

_TABLE_KEYS = {"secret": "mounts", "auth": "auth"}
#: Engines that exist once, are created at init and cannot be moved or removed.
_PINNED = {
    ("secret", "sys/"),
    ("secret", "cubbyhole/"),
    ("secret", "identity/"),
    ("auth", "token/"),
}
_RESERVED_SECRET_PREFIXES = ("sys/", "auth/", "cubbyhole/", "identity/")


def default_mounts() -> list[MountEntry]:
    """What a fresh installation has, as the reference: sys, cubbyhole and ``secret/`` (KV v2)."""
    return [
        new_mount(
            "sys/", "system", description="system endpoints used for control, policy and debugging"
        ),
        new_mount(
            "cubbyhole/", "cubbyhole", description="per-token private secret storage", local=True
        ),
        new_mount(
            "secret/", "kv", description="key/value secret storage", options={"version": "2"}
        ),
    ]


def default_auth_mounts() -> list[MountEntry]:
    return [new_mount("token/", "token", description="token based credentials", table="auth")]


class MountTable:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._view = BarrierView(core.barrier, "core/")
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        """Read both tables (creating the defaults once) and mount every backend."""
        self._core.router.clear()
        for table, defaults in (("secret", default_mounts), ("auth", default_auth_mounts)):
            raw: list[dict[str, Any]] | None = await self._view.get_json(_TABLE_KEYS[table])
            if raw is None:
                entries = defaults()
                await self._save(table, entries)
            else:
                entries = [MountEntry.from_json(item) for item in raw]
            for entry in entries:
                self._mount(entry)

    def _mount(self, entry: MountEntry) -> None:
        view = BarrierView(self._core.barrier, entry.storage_prefix)
        self._core.router.mount(entry, build_backend(entry, view, self._core))

    async def _save(self, table: str, entries: list[MountEntry]) -> None:
        await self._view.put_json(_TABLE_KEYS[table], [e.to_json() for e in entries])

    def entries(self, table: str = "secret") -> list[MountEntry]:
        return sorted(
            (e for e in self._core.router.entries() if e.table == table), key=lambda e: e.path
        )

    def find(self, table: str, path: str) -> MountEntry:
        path = normalise_path(path)
        for entry in self.entries(table):
            if entry.path == path:
                return entry
        raise InvalidRequestError(
            f"no {'auth method' if table == 'auth' else 'secrets engine'} mounted at {path}"
        )

    def _check_free(self, entry: MountEntry) -> None:
        if entry.table == "secret" and entry.path.startswith(_RESERVED_SECRET_PREFIXES):
            raise InvalidRequestError(f"cannot mount at reserved path {entry.path!r}")
        for existing in self._core.router.entries():
            a, b = existing.route_path, entry.route_path
            if a.startswith(b) or b.startswith(a):
                raise InvalidRequestError(f"path is already in use at {existing.route_path}")

    async def enable(self, entry: MountEntry) -> None:
        async with self._lock:
            self._check_free(entry)
            self._mount(entry)
            await self._save(entry.table, self.entries(entry.table))

    async def disable(self, table: str, path: str) -> None:
        """Unmount and delete every stored value of the mount."""
        async with self._lock:
            entry = self.find(table, path)
            if (table, entry.path) in _PINNED:
                raise InvalidRequestError(f"cannot unmount {entry.path!r}")
            self._core.router.unmount(entry.route_path)
            await self._save(table, self.entries(table))
            view = BarrierView(self._core.barrier, entry.storage_prefix)
            keys = await view.list_recursive()
            for start in range(0, len(keys), 256):
                await view.commit([Delete(key) for key in keys[start : start + 256]])

    async def tune(self, table: str, path: str, **changes: Any) -> MountEntry:
        async with self._lock:
            entry = self.find(table, path)
            tuned = entry.with_changes(**changes)
            self._core.router.unmount(entry.route_path)
            self._mount(tuned)
            await self._save(table, self.entries(table))
            return tuned

    async def remount(self, table: str, source: str, target: str) -> MountEntry:
        """Move a mount; its data stays where it is (keyed by uuid, not path)."""
        async with self._lock:
            entry = self.find(table, source)
            if (table, entry.path) in _PINNED:
                raise InvalidRequestError(f"cannot remount {entry.path!r}")
            moved = entry.with_changes(path=normalise_path(target))
            self._core.router.unmount(entry.route_path)
            try:
                self._check_free(moved)
            except InvalidRequestError:
                self._mount(entry)
                raise
            self._mount(moved)
            await self._save(table, self.entries(table))
            return moved
