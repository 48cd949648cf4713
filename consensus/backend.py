"""``RaftBackend``: the replicated ``PhysicalBackend`` the core runs on.

Reads (``get``/``list``) are served from this node's replica and may trail
the leader; a caller that needs its own write back on another node waits
with :meth:`RaftBackend.wait_for_index` for the write's revision. Revisions,
``applied_index`` and change notifications are logical indexes (the Raft log
index plus the revisions earlier batches used, see :mod:`consensus.state`);
``committed_index`` is Raft's own. ``wait_for_index`` takes either.

Writes become one command each, submitted from any node (pysyncobj
forwards a follower's command to the leader) through
:class:`consensus.batching.CommitBatcher`, which packs concurrent
transactions into one Raft entry, and awaited as a future that the Raft
thread completes through :class:`consensus.bridge.LoopBridge`.

A pysyncobj callback may never fire, or fire late as DISCARDED, after a
failover (pysyncobj.md section 2), so every attempt has a timeout, and a
retry re-submits the *same* command id: replicas answer a known id with its
first outcome, so a command that did commit is never applied twice. That
holds for a command that travelled inside a batch too (replicas remember
inner ids); its retry may travel alone or in another batch. After
the last attempt the write raises ``StorageError`` and its outcome is
unknown (it may still commit); callers that retry with a *new* write should
make it conditional (``expect``) to stay safe.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Callable, Sequence
from typing import Any

from consensus.batching import CommitBatcher, Outcome
from consensus.bridge import FAIL_NAMES, IndexWaiters, LoopBridge
from consensus.commands import (
    Applied,
    Command,
    CommandError,
    Mismatch,
    Restore,
    Result,
    Txn,
    encode_command,
    new_command_id,
)
from consensus.config import RaftConfig
from consensus.membership import Membership, Server
from consensus.node import RaftNode
from consensus.snapshot import SnapshotError, decode_snapshot, encode_snapshot
from consensus.state import ChangeSet
from sdk.certs import RaftTLS
from sdk.errors import (
    InvalidRequestError,
    PayloadTooLargeError,
    RevisionMismatchError,
    StorageError,
)
from sdk.physical import Delete, Entry, Put, TxnOp, validate_key
from sdk.timings import RaftTimings

__all__ = ["RaftBackend"]

log = logging.getLogger(__name__)

_BACKOFF_FIRST, _BACKOFF_MAX = 0.025, 0.4
#: How often attempts submitted on the leader check that the lease still holds.
_LEASE_POLL = 0.05


class RaftBackend:
    """A node's replicated storage; open it with :meth:`open`."""

    def __init__(self, node: RaftNode, loop: asyncio.AbstractEventLoop) -> None:
        self._node = node
        self._config = node.config
        self._bridge = LoopBridge(loop)
        self._batcher = CommitBatcher(
            # looked up per call
            lambda blob, callback, decoded: self._node.submit(blob, callback, decoded),
            self._bridge,
            loop,
            max_in_flight=self._config.batch_max_in_flight,
            max_commands=self._config.batch_max_commands,
            # Only a lost callback holds a slot this long; a slow commit merely
            # lets the next batch overlap it.
            release_after=self._config.request_timeout / 4,
            expire_after=self._config.request_timeout,
        )
        # Attempts submitted while leading, watched together for the lease (one
        # timer for all of them, not one per write).
        self._led_attempts: list[asyncio.Future[Outcome]] = []
        self._lease_timer: asyncio.TimerHandle | None = None
        self._waiters = IndexWaiters()  # logical indexes
        self._log_waiters = IndexWaiters()  # Raft log indexes
        # The indexes as the event loop has seen them: progress is posted after the
        # change reports of the same entries, so once these reach an index every
        # cache on this loop has been told about it (the Raft thread's own counters
        # run ahead of the reports).
        self._loop_applied = self._loop_log_applied = 0
        self._subscribers: list[Callable[[ChangeSet], None]] = []
        self._closed = False
        self.membership = Membership(node, self._bridge, self._run_command)
        node.on_progress = self._on_progress
        node.on_handoff = self._bridge.flush
        node.add_listener(lambda changes: self._bridge.post(lambda: self._dispatch(changes)))

    @classmethod
    async def open(cls, config: RaftConfig) -> RaftBackend:
        """Load the replica (off the loop: journal and dump reads) and start it."""
        node = await asyncio.to_thread(RaftNode, config)
        backend = cls(node, asyncio.get_running_loop())
        node.start()
        return backend

    # -- PhysicalBackend -------------------------------------------------------

    async def get(self, key: str) -> Entry | None:
        validate_key(key)
        self._ensure_usable()
        found = self._node.state.get(key)
        return Entry(key, found[0], found[1]) if found else None

    async def list(self, prefix: str) -> list[str]:
        self._ensure_usable()
        return self._node.state.list(prefix)

    async def put(self, key: str, value: bytes) -> int:
        return await self.commit([Put(key, value)])

    async def delete(self, key: str) -> None:
        await self.commit([Delete(key)])

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        for op in ops:
            validate_key(op.key)
        result = await self._run_command(Txn(new_command_id(), tuple(ops)))
        if isinstance(result, Mismatch):
            raise RevisionMismatchError(result.key, result.expected, result.actual)
        assert isinstance(result, Applied)
        return result.revision

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._node.stop)
        self._batcher.close()
        self._bridge.close()
        self._waiters.fail_all(StorageError("raft storage is closed"))
        self._log_waiters.fail_all(StorageError("raft storage is closed"))

    # -- cluster ---------------------------------------------------------------------

    def applied_index(self) -> int:
        """The logical index applied here: the revision of the last write applied."""
        return self._node.applied_index() + self._node.state.offset

    def timings(self) -> RaftTimings:
        """Commit and fsync latencies and batching since this replica started."""
        batcher = self._batcher
        return RaftTimings(
            commit=batcher.commit_timings.snapshot(),
            fsync=self._node.fsync_timings.snapshot(),
            entries=batcher.entries_sent,
            commands=batcher.commands_sent,
        )

    def committed_index(self) -> int:
        """Raft's commit index (log entries, comparable with peers' match indexes)."""
        return self._node.commit_index()

    def link_view(self) -> tuple[frozenset[str], str | None, int, int]:
        """(connected peers' addresses, the leader's address, Raft commit index, Raft
        applied index): the part of :meth:`status` the cluster watcher reads 20
        times a second, without building the rest (peer list, node ids, match
        indexes, lease) each time."""
        node = self._node
        return (
            node.connected_peers(),
            node.leader_address(),
            node.commit_index(),
            node.applied_index(),
        )

    async def wait_for_index(self, index: int, timeout: float) -> None:
        """Wait until this replica has applied ``index`` (read-your-writes).

        ``index`` is a revision or an :meth:`applied_index` (logical), or a
        :meth:`committed_index` (Raft's, never above the logical one). Both
        are covered: the logical applied index must reach ``index``, and the
        log must be applied up to ``index`` or to what is committed now,
        whichever is lower. The second part only finishes applying what this
        replica already knows committed, so it never waits for new entries.
        """
        self._ensure_usable()
        log_target = min(index, self._node.commit_index())
        try:
            async with asyncio.timeout(timeout):
                if self._loop_log_applied < log_target:
                    await self._log_waiters.add(log_target)
                if self._loop_applied < index:
                    await self._waiters.add(index)
        except TimeoutError as exc:
            raise StorageError(
                f"replica did not reach index {index} within {timeout}s "
                f"(applied {self.applied_index()})"
            ) from exc

    async def wait_for_leader(self, timeout: float) -> Server:
        """Wait until this node knows a leader (polling; used at start-up)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (leader := self.leader()) is None:
            if asyncio.get_running_loop().time() > deadline:
                raise StorageError(f"no raft leader within {timeout}s")
            await asyncio.sleep(0.01)
        return leader

    def is_leader(self) -> bool:
        return self._node.is_leader()

    def has_lease(self) -> bool:
        """Whether this node leads *and* holds its leader lease.

        True only while a majority acknowledged this leader within
        ``RaftConfig.lease_duration`` (the minimum election timeout less the
        clock-drift margin) of its own monotonic clock; those followers refuse
        every vote until then, so no other leader can exist. A leader cut off
        from its majority loses the lease within that bound, before any other
        node can be elected. Reads and writes on the active node should
        require it (``node.cluster.role``).

        Nor before this loop has been told of every entry of earlier terms: a new
        leader applies them on its Raft thread when its no-op commits, and their
        change reports reach the caches here after that. A read served in between
        could find a value this node cached as a standby, older than a write its
        predecessor acknowledged.
        """
        node = self._node
        return node.has_lease() and self._loop_log_applied >= node.lease_from()

    def leader(self) -> Server | None:
        return self.membership.leader()

    def configuration(self) -> builtins.list[Server]:
        return self.membership.configuration()

    def status(self) -> dict[str, Any]:
        status = self._node.status()
        status["node_id"] = self._config.node_id
        status["address"] = self._config.cluster_addr
        status["durability"] = self._config.durability.value
        status["leader_id"] = leader.node_id if (leader := self.leader()) else None
        status["peers"] = [
            {
                "node_id": server.node_id,
                "address": server.address,
                "match_index": status["match_index"].get(server.address),
                "connected": status["connected"].get(server.address, False),
            }
            for server in self.configuration()
            if server.address != self._config.cluster_addr
        ]
        status["failure"] = self._node.failure
        return status

    def subscribe(self, callback: Callable[[ChangeSet], None]) -> Callable[[], None]:
        """Call ``callback`` on the event loop with the keys of every applied write."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def reload_tls(self, tls: RaftTLS) -> None:
        """Present a rotated certificate from the next Raft handshake on."""
        self._ensure_usable()
        self._node.reload_tls(tls)

    async def add_peer(self, node_id: str, address: str) -> None:
        self._ensure_usable()
        await self.membership.add(node_id, address)

    async def remove_peer(self, node_id: str) -> None:
        self._ensure_usable()
        await self.membership.remove(node_id)

    async def transfer_leadership(self) -> None:
        """Hand leadership to the most caught-up follower (``sys/step-down``) and
        return once this node no longer leads; a refusal (no caught-up follower
        connected, not the leader) is a :class:`StorageError`."""
        self._ensure_usable()
        future, callback = self._bridge.callback()
        self._node.transfer_leadership(callback)
        timeout = self._node.config.request_timeout
        try:
            async with asyncio.timeout(timeout):
                _, error = await future
        except TimeoutError:
            raise StorageError("raft leadership transfer was not sent in time") from None
        if error != 0:
            reason = FAIL_NAMES.get(error, str(error))
            raise StorageError(f"raft leadership transfer refused ({reason})")
        deadline = asyncio.get_running_loop().time() + timeout
        while self._node.is_leader() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        if self._node.is_leader():
            raise StorageError("raft leadership transfer did not complete in time")

    async def export_snapshot(self) -> bytes:
        """The key space in our explicit format (no Raft internals)."""
        self._ensure_usable()
        image = self._node.state.capture()
        return await asyncio.to_thread(lambda: b"".join(encode_snapshot(image, None)))

    async def restore_snapshot(self, data: bytes) -> int:
        """Replace every key with the export's, through one replicated command."""
        try:
            image, _ = await asyncio.to_thread(decode_snapshot, data.splitlines(keepends=True))
        except SnapshotError as exc:
            raise InvalidRequestError(f"invalid snapshot: {exc}") from exc
        items = tuple((key, value) for key, (value, _) in sorted(image.data.items()))
        result = await self._run_command(Restore(new_command_id(), items))
        assert isinstance(result, Applied)
        return result.revision

    def force_compaction(self) -> None:
        self._node.force_compaction()

    # -- internals --------------------------------------------------------------------

    def _ensure_usable(self) -> None:
        if self._closed:
            raise StorageError("raft storage is closed")
        if self._node.failure:
            raise StorageError(self._node.failure)

    def _on_progress(self, applied: int) -> None:
        """On the Raft thread, the only writer of the offset: convert, then hand over."""
        logical = applied + self._node.state.offset

        def advance() -> None:
            self._loop_log_applied = max(self._loop_log_applied, applied)
            self._loop_applied = max(self._loop_applied, logical)
            self._log_waiters.advance(applied)
            self._waiters.advance(logical)

        self._bridge.post(advance)

    def _dispatch(self, changes: ChangeSet) -> None:
        for callback in list(self._subscribers):
            try:
                callback(changes)
            except Exception:
                log.exception("a raft change subscriber failed")

    async def _run_command(self, command: Command) -> Result:
        try:
            blob = encode_command(command)
        except CommandError as exc:
            raise PayloadTooLargeError(str(exc)) from exc
        state = self._node.state
        reason = "not submitted"
        for attempt in range(self._config.request_attempts):
            if attempt:
                await asyncio.sleep(min(_BACKOFF_FIRST * 2 ** (attempt - 1), _BACKOFF_MAX))
                # A fresh id is unknown; after a failed attempt the command may
                # have been applied all the same.
                known = state.result_for(command.id)
                if known is not None:
                    return self._checked(known)
            self._ensure_usable()
            future = self._batcher.submit(command, blob)
            if self._node.is_leader():
                self._watch_lease(future)
            outcome = await future  # raises StorageError if undecodable
            if isinstance(outcome, str):
                reason = outcome
                continue
            return self._checked(outcome)
        known = state.result_for(command.id)
        if known is not None:
            return self._checked(known)
        raise StorageError(
            f"raft write not confirmed after {self._config.request_attempts} attempts "
            f"(last: {reason}); it may still be applied"
        )

    def _watch_lease(self, attempt: asyncio.Future[Outcome]) -> None:
        """End ``attempt``, submitted while this node led, once the lease is lost.

        Cut off from its majority, the entry may never commit, and pysyncobj
        would not say so until the log is overwritten. The retry (same command
        id) goes to whoever leads now, or fails after the usual attempts, so the
        caller hears within about the lease instead of after ``request_timeout``
        (which the batcher's expiry enforces for every attempt).
        """
        self._led_attempts.append(attempt)
        if self._lease_timer is None:
            loop = asyncio.get_running_loop()
            self._lease_timer = loop.call_later(_LEASE_POLL, self._check_lease)

    def _check_lease(self) -> None:
        self._lease_timer = None
        open_attempts = [attempt for attempt in self._led_attempts if not attempt.done()]
        if open_attempts and not self._node.has_lease():
            for attempt in open_attempts:
                attempt.set_result("leader lease lost")
            open_attempts = []
        self._led_attempts = open_attempts
        if open_attempts:
            loop = asyncio.get_running_loop()
            self._lease_timer = loop.call_later(_LEASE_POLL, self._check_lease)

    @staticmethod
    def _checked(result: Result) -> Result:
        if isinstance(result, Applied | Mismatch):
            return result
        raise InvalidRequestError(f"storage command rejected: {result.reason}")
