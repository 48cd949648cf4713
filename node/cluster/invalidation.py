"""Keeps a node's caches in step with the entries its replica applies.

The replica reports the physical keys of every applied entry (on the event
loop). Cheap invalidations (the barrier's read cache, policies, identity)
happen at once; reloads that read storage (namespaces, mount tables,
keyring) run in order on one task.
:meth:`Invalidator.settled` lets a caller wait until everything applied so
far has been processed, which is how a standby that relayed a write answers
only once its own caches show it.

The active node sees its own writes come back too, so every reload compares
before it changes anything: an unchanged mount keeps its backend instance.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING

from node.audit import AUDIT_TABLE_KEY
from node.barrier.barrier import KEYRING_PATH
from node.barrier.view import BarrierView
from node.cluster.ports import Changes
from node.engines.registry import build_backend
from node.namespaces.model import ROOT, Namespace
from node.routing.mounts import MountEntry

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["Invalidator"]

log = logging.getLogger("coffer.cluster")

_NS = r"(?:namespaces/(?P<ns>[^/]+)/)?"
_MOUNTS = re.compile(_NS + r"core/(?:mounts|auth)$")
_POLICY = re.compile(_NS + r"sys/policy/policy/(?P<name>.+)$")
_NAMESPACES = "sys/namespaces/"
_TABLES = {"secret": "mounts", "auth": "auth"}

#: What a reload does: ("all",), ("namespaces",), ("mounts", ns id), ("keyring",) or ("audit",).
Job = tuple[str, ...]


class Invalidator:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._queue: asyncio.Queue[tuple[int, Job]] = asyncio.Queue()
        self._done_index = 0
        self._seen_index = 0
        self._progress = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    def start(self, applied: int) -> None:
        self._done_index = self._seen_index = applied
        # Entries applied between the barrier's unseal and our subscription were
        # reported to nobody: forget whatever was read while they went by.
        self._core.barrier.invalidate_all()
        self._task = asyncio.create_task(self._run(), name="cluster-invalidation")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._queue = asyncio.Queue()

    # -- intake (event loop, from the replica's subscription) -----------------------

    def on_changes(self, changes: Changes) -> None:
        # The read cache first and always (sealed or not yet serving too): the
        # replica already holds the new values, so nothing may serve old ones.
        if changes.reset:
            self._core.barrier.invalidate_all()
        else:
            self._core.barrier.invalidate(changes.keys)
        if self._task is None or self._core.sealed:
            return
        self._seen_index = max(self._seen_index, changes.index)
        jobs: list[Job] = []
        if changes.reset:
            jobs.append(("all",))
        for key in changes.keys:
            jobs.extend(self._classify(key))
        if not jobs:
            self._queue.put_nowait((changes.index, ()))
        for job in dict.fromkeys(jobs):
            self._queue.put_nowait((changes.index, job))

    def _classify(self, key: str) -> list[Job]:
        core = self._core
        if key == KEYRING_PATH:
            return [("keyring",)]
        if key == AUDIT_TABLE_KEY:
            return [("audit",)]
        if key.startswith(_NAMESPACES):
            return [("namespaces",)]
        if match := _MOUNTS.match(key):
            return [("mounts", match["ns"] or ROOT.id)]
        if match := _POLICY.match(key):
            store = core.policy_store(match["ns"] or ROOT.id)
            store.invalidate(match["name"])
            core.access.clear()
            return []
        for entry in core.router.entries():
            if entry.type == "identity" and key.startswith(entry.storage_prefix):
                invalidate = getattr(core.identity, "invalidate", None)
                if invalidate is not None:
                    invalidate()
                break
        return []

    async def settled(self, index: int, timeout: float) -> None:
        """Wait until every change up to ``index`` has been processed."""
        if self._seen_index < index:
            # The replica may count ``index`` as applied while its report is still
            # queued for the loop (posted from the Raft thread): let it run first.
            await asyncio.sleep(0)
        async with asyncio.timeout(timeout), self._progress:
            await self._progress.wait_for(
                lambda: self._done_index >= min(index, self._seen_index) or self._task is None
            )

    # -- the reload task ---------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            index, job = await self._queue.get()
            if job:
                try:
                    await self._reload(job)
                except Exception:  # a failed reload must not stop later ones
                    log.exception("cache reload failed", extra={"event": "cluster.reload_failed"})
            async with self._progress:
                self._done_index = max(self._done_index, index)
                self._progress.notify_all()

    async def _reload(self, job: Job) -> None:
        core = self._core
        if core.sealed:
            return
        kind = job[0]
        if kind == "keyring":
            await core.barrier.reload_keyring()
        elif kind == "audit":
            await core.audit.reload()
        elif kind == "mounts":
            namespace = core.namespaces.by_id(job[1])
            if namespace is not None:
                await self._reload_mounts(namespace)
        else:
            if kind == "all":
                await core.barrier.reload_keyring()
                for namespace in core.namespaces.all():
                    core.policy_store(namespace.id).invalidate()
                invalidate = getattr(core.identity, "invalidate", None)
                if invalidate is not None:
                    invalidate()
                await core.audit.reload()
            await self._reload_namespaces()
            core.access.clear()

    async def _reload_namespaces(self) -> None:
        core = self._core
        before = {ns.id for ns in core.namespaces.all()}
        await core.namespaces.load()
        after = {ns.id: ns for ns in core.namespaces.all()}
        for entry in core.router.entries():
            if entry.namespace_id not in after:
                core.router.unmount(entry.route_path)
        for namespace_id in before - set(after):
            if core.identity is not None:
                core.identity.unregister(namespace_id)
        for namespace in core.namespaces.all():
            await self._reload_mounts(namespace)

    async def _reload_mounts(self, namespace: Namespace) -> None:
        """Make the router match the stored tables; unchanged mounts stay as they are."""
        core = self._core
        view = BarrierView(core.barrier, namespace.storage_prefix + "core/")
        async with core.mounts._lock:  # never interleave with a local mount change
            for table, key in _TABLES.items():
                raw = await view.get_json(key)
                if raw is None:
                    continue  # not written yet; the write will come through here
                wanted = {e.route_path: e for e in (MountEntry.from_json(item) for item in raw)}
                current = {
                    e.route_path: e
                    for e in core.router.entries()
                    if e.namespace_id == namespace.id and e.table == table
                }
                for path, entry in current.items():
                    if wanted.get(path) != entry:
                        core.router.unmount(path)
                for path, entry in wanted.items():
                    if current.get(path) != entry:
                        backend_view = BarrierView(core.barrier, entry.storage_prefix)
                        core.router.mount(entry, build_backend(entry, backend_view, core))
