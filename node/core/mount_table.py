"""The persisted mount table and the mounting of backends at unseal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from node.barrier.view import BarrierView
from node.engines.registry import build_backend
from node.errors import InvalidRequestError
from node.routing.mounts import MountEntry, new_mount

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["MOUNT_TABLE_KEY", "MountTable"]

MOUNT_TABLE_KEY = "mounts"


def default_mounts() -> list[MountEntry]:
    """What a fresh installation has: ``sys/`` and a KV v2 engine at ``secret/``."""
    return [
        new_mount(
            "sys/", "system", description="system endpoints used for control, policy and debugging"
        ),
        new_mount(
            "secret/", "kv", description="key/value secret storage", options={"version": "2"}
        ),
    ]


class MountTable:
    """Loads ``core/mounts`` from the barrier and mounts each backend."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._view = BarrierView(core.barrier, "core/")

    async def load(self) -> None:
        raw: list[dict[str, Any]] | None = await self._view.get_json(MOUNT_TABLE_KEY)
        if raw is None:
            entries = default_mounts()
            await self._save(entries)
        else:
            entries = [MountEntry.from_json(item) for item in raw]
        self._core.router.clear()
        for entry in entries:
            self._mount(entry)

    def _mount(self, entry: MountEntry) -> None:
        view = BarrierView(self._core.barrier, entry.storage_prefix)
        self._core.router.mount(entry, build_backend(entry, view, self._core))

    async def _save(self, entries: list[MountEntry]) -> None:
        await self._view.put_json(MOUNT_TABLE_KEY, [e.to_json() for e in entries])

    def entries(self) -> list[MountEntry]:
        return self._core.router.entries()

    async def enable(self, entry: MountEntry) -> None:
        if any(
            e.path.startswith(entry.path) or entry.path.startswith(e.path) for e in self.entries()
        ):
            raise InvalidRequestError(f"path is already in use at {entry.path}")
        self._mount(entry)
        await self._save(self.entries())
