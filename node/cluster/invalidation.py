"""The cluster's side of invalidation: its replica's change reports go to the core.

What a replicated write changes (caches, mount tables, a backend's keys) is
decided by the core's one entry point for applied writes
(``node.core.replicated.ReplicatedWrites``, which hands mounts to the mount
table). This adapter only gives the cluster a name for it, so the cluster
neither imports the core nor knows any storage layout.
"""

from __future__ import annotations

from typing import Protocol

from sdk.physical import AppliedChanges

__all__ = ["AppliedWrites", "Invalidator"]


class AppliedWrites(Protocol):
    """Where applied entries are reported (the core's ``replicated``)."""

    def start(self, applied: int) -> None: ...

    async def stop(self) -> None: ...

    def on_changes(self, changes: AppliedChanges) -> None: ...

    async def settled(self, index: int, timeout: float) -> None: ...


class _HasAppliedWrites(Protocol):
    @property
    def replicated(self) -> AppliedWrites: ...


class Invalidator:
    def __init__(self, core: _HasAppliedWrites) -> None:
        self._writes = core.replicated

    def start(self, applied: int) -> None:
        self._writes.start(applied)

    async def stop(self) -> None:
        await self._writes.stop()

    def on_changes(self, changes: AppliedChanges) -> None:
        self._writes.on_changes(changes)

    async def settled(self, index: int, timeout: float) -> None:
        """Wait until every change up to ``index`` has been processed."""
        await self._writes.settled(index, timeout)
