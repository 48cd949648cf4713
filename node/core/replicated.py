"""The one entry point for writes this node did not make: keeps its caches and mounts in step.

A replica reports the barrier keys of every entry it applied (on the event
loop) to :meth:`ReplicatedWrites.on_changes`. Today the Raft cluster does
(``node.cluster.invalidation`` hands its subscription here); cross-cluster
replication writes what it receives into the secondary's Raft log, so those
writes arrive here too and reach backends the same way; on a primary, the
same feed is what ``node.replication`` ships (``observe``).

Cheap invalidations (the barrier's read cache, policies, a backend's
``invalidate(key)``) happen at once; reloads that read storage (namespaces,
mount tables, keyring) run in order on one task. Mount tables and keys under
a mount belong to the mount table (``node.core.mount_table``), the one owner
of the mount lifecycle. :meth:`settled` lets a caller wait until everything
applied so far has been processed, which is how a standby that relayed a
write answers only once its own caches show it. An entry that needs no reload
(every KV write) is counted processed at once when no reload is queued before
it, without a trip through the queue and the task (issue 16: that trip was
paid on every node for every write).

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
from node.namespaces.model import ROOT
from sdk.physical import AppliedChanges

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["ReplicatedWrites"]

log = logging.getLogger("coffer.core.replicated")

_POLICY = re.compile(r"(?:namespaces/(?P<ns>[^/]+)/)?sys/policy/policy/(?P<name>.+)$")
#: In every key ``_POLICY`` matches: a substring test spares most keys the regex.
_POLICY_MARK = "sys/policy/policy/"
_NAMESPACES = "sys/namespaces/"

#: What a reload does: ("all",), ("namespaces",), ("mounts", ns id), ("keyring",) or ("audit",).
Job = tuple[str, ...]

_FIXED_JOBS: dict[str, Job] = {KEYRING_PATH: ("keyring",), AUDIT_TABLE_KEY: ("audit",)}


class ReplicatedWrites:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._queue: asyncio.Queue[tuple[int, Job]] = asyncio.Queue()
        #: Entries put in the queue and not yet processed by the task.
        self._queued = 0
        self._done_index = 0
        self._seen_index = 0
        #: ``settled`` callers: (index asked for, future), woken as entries are done.
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._task: asyncio.Task[None] | None = None

    def start(self, applied: int) -> None:
        """Begin processing; ``applied`` is the last index already reflected in storage."""
        self._done_index = self._seen_index = applied
        # Entries applied between the barrier's unseal and our subscription were
        # reported to nobody: forget whatever was read while they went by.
        self._core.barrier.invalidate_all()
        self._task = asyncio.create_task(self._run(), name="replicated-writes")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._queue = asyncio.Queue()
        self._queued = 0
        self._wake()

    # -- intake (event loop, from the replica's subscription) -----------------------

    def on_changes(self, changes: AppliedChanges) -> None:
        """Entries applied to this node's storage by someone else."""
        # The read cache first and always (sealed or not yet serving too): the
        # replica already holds the new values, so nothing may serve old ones.
        if changes.reset:
            self._core.barrier.invalidate_all()
        else:
            self._core.barrier.invalidate(changes.keys)
        # A replication primary ships what was applied (a no-op elsewhere).
        self._core.replication.observe(changes)
        if self._task is None or self._core.sealed:
            return
        self._seen_index = max(self._seen_index, changes.index)
        jobs: dict[Job, None] = {("all",): None} if changes.reset else {}
        # Nearly every key is under a mount's storage (a KV write's own keys): its
        # backend is told at once, and it needs no reload (table, policy, namespace,
        # keyring and audit keys are all outside ``[namespaces/<id>/]logical|auth/``).
        classify = self._classify
        for key in self._core.mounts.invalidate_keys(changes.keys):
            if (job := classify(key)) is not None:
                jobs[job] = None
        if not jobs and not self._queued:
            # Nothing queued before it: this entry is processed already.
            self._done_index = max(self._done_index, changes.index)
            if self._waiters:
                self._wake()
            return
        for job in jobs or ((),):
            self._queued += 1
            self._queue.put_nowait((changes.index, job))

    def _classify(self, key: str) -> Job | None:
        """The reload ``key`` (owned by no mount) needs, if any; cheap invalidations
        are done here. A substring test spares most keys the regex."""
        core = self._core
        if (job := _FIXED_JOBS.get(key)) is not None:
            return job
        if key.startswith(_NAMESPACES):
            return ("namespaces",)
        if (namespace_id := core.mounts.table_owner(key)) is not None:
            return ("mounts", namespace_id)
        if _POLICY_MARK in key and (match := _POLICY.match(key)):
            store = core.policy_store(match["ns"] or ROOT.id)
            store.invalidate(match["name"])
            core.access.clear()
        return None

    async def settled(self, index: int, timeout: float) -> None:
        """Wait until every change up to ``index`` has been processed."""
        if self._seen_index < index:
            # The replica may count ``index`` as applied while its report is still
            # queued for the loop (posted from the Raft thread): let it run first.
            await asyncio.sleep(0)
        if self._is_settled(index):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter = (index, future)
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await future
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _is_settled(self, index: int) -> bool:
        return self._done_index >= min(index, self._seen_index) or self._task is None

    def _wake(self) -> None:
        """Complete the ``settled`` callers whose entries are all processed now."""
        still: list[tuple[int, asyncio.Future[None]]] = []
        for index, future in self._waiters:
            if future.done():
                continue
            if self._is_settled(index):
                future.set_result(None)
            else:
                still.append((index, future))
        self._waiters = still

    # -- the reload task ---------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            index, job = await self._queue.get()
            if job:
                try:
                    await self._reload(job)
                except Exception:  # a failed reload must not stop later ones
                    log.exception("cache reload failed", extra={"event": "cluster.reload_failed"})
            self._queued -= 1
            self._done_index = max(self._done_index, index)
            if self._waiters:
                self._wake()

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
                await core.mounts.reconcile(namespace)
        else:
            if kind == "all":
                await core.barrier.reload_keyring()
                for namespace in core.namespaces.all():
                    core.policy_store(namespace.id).invalidate()
                core.mounts.invalidate_all()
                await core.audit.reload()
            await self._reload_namespaces()
            core.access.clear()

    async def _reload_namespaces(self) -> None:
        core = self._core
        before = {ns.id for ns in core.namespaces.all()}
        await core.namespaces.load()
        after = {ns.id for ns in core.namespaces.all()}
        for namespace_id in {e.namespace_id for e in core.router.entries()} - after:
            await core.mounts.unload_namespace(namespace_id)
        for namespace_id in before - after:
            if core.identity is not None:
                core.identity.unregister(namespace_id)
        for namespace in core.namespaces.all():
            await core.mounts.reconcile(namespace)
