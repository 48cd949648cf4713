"""``RaftBackend``: the replicated ``PhysicalBackend`` the core runs on.

Reads (``get``/``list``) are served from this node's replica and may trail
the leader; a caller that needs its own write back on another node waits
with :meth:`RaftBackend.wait_for_index` for the write's revision (= its log
index). Writes become one command, submitted from any node (pysyncobj
forwards a follower's command to the leader) and awaited as a future that
the Raft thread completes through :class:`consensus.bridge.LoopBridge`.

A pysyncobj callback may never fire, or fire late as DISCARDED, after a
failover (pysyncobj.md section 2), so every attempt has a timeout, and a
retry re-submits the *same* command id: replicas answer a known id with its
first outcome, so a command that did commit is never applied twice. After
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

from consensus.bridge import FAIL_NAMES, IndexWaiters, LoopBridge
from consensus.commands import (
    Applied,
    Command,
    CommandError,
    Mismatch,
    Restore,
    Result,
    Txn,
    decode_result,
    encode_command,
    new_command_id,
)
from consensus.config import RaftConfig
from consensus.membership import Membership, Server
from consensus.node import RaftNode
from consensus.snapshot import SnapshotError, decode_snapshot, encode_snapshot
from consensus.state import ChangeSet
from node.errors import (
    InvalidRequestError,
    PayloadTooLargeError,
    RevisionMismatchError,
    StorageError,
)
from node.physical.base import Delete, Entry, Put, TxnOp, validate_key

__all__ = ["RaftBackend"]

log = logging.getLogger(__name__)

_SUCCESS = 0
_BACKOFF_FIRST, _BACKOFF_MAX = 0.025, 0.4


class RaftBackend:
    """A node's replicated storage; open it with :meth:`open`."""

    def __init__(self, node: RaftNode, loop: asyncio.AbstractEventLoop) -> None:
        self._node = node
        self._config = node.config
        self._bridge = LoopBridge(loop)
        self._waiters = IndexWaiters()
        self._subscribers: list[Callable[[ChangeSet], None]] = []
        self._closed = False
        self.membership = Membership(node, self._bridge, self._run_command)
        node.on_progress = lambda applied: self._bridge.post(lambda: self._waiters.advance(applied))
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
        self._bridge.close()
        self._waiters.fail_all(StorageError("raft storage is closed"))

    # -- cluster ---------------------------------------------------------------------

    def applied_index(self) -> int:
        return self._node.applied_index()

    def committed_index(self) -> int:
        return self._node.commit_index()

    async def wait_for_index(self, index: int, timeout: float) -> None:
        """Wait until this replica has applied ``index`` (read-your-writes)."""
        self._ensure_usable()
        if self._node.applied_index() >= index:
            return
        waiter = self._waiters.add(index)
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError as exc:
            raise StorageError(
                f"replica did not reach index {index} within {timeout}s "
                f"(applied {self._node.applied_index()})"
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

    async def add_peer(self, node_id: str, address: str) -> None:
        self._ensure_usable()
        await self.membership.add(node_id, address)

    async def remove_peer(self, node_id: str) -> None:
        self._ensure_usable()
        await self.membership.remove(node_id)

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
        pending: set[asyncio.Future[tuple[Any, int]]] = set()
        reason = "not submitted"
        for attempt in range(self._config.request_attempts):
            if attempt:
                await asyncio.sleep(min(_BACKOFF_FIRST * 2 ** (attempt - 1), _BACKOFF_MAX))
            known = state.result_for(command.id)
            if known is not None:
                return self._checked(known)
            self._ensure_usable()
            future, callback = self._bridge.callback()
            try:
                self._node.submit(blob, callback)
            except (OSError, TypeError) as exc:  # stopping underneath us
                reason = repr(exc)
                continue
            pending.add(future)
            outcome = await self._await_attempt(future, pending)
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

    async def _await_attempt(
        self,
        current: asyncio.Future[tuple[Any, int]],
        pending: set[asyncio.Future[tuple[Any, int]]],
    ) -> Result | str:
        """The first success among all attempts so far, or why ``current`` failed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._config.request_timeout
        while True:
            done, _ = await asyncio.wait(
                pending, timeout=max(deadline - loop.time(), 0), return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                return "timeout"
            for future in done:
                pending.discard(future)
                result, error = future.result()
                if error == _SUCCESS:
                    try:
                        return decode_result(result)
                    except CommandError as exc:
                        raise StorageError(f"undecodable raft result: {exc}") from exc
            if current.done():
                error = current.result()[1]
                return FAIL_NAMES.get(error, str(error))

    @staticmethod
    def _checked(result: Result) -> Result:
        if isinstance(result, Applied | Mismatch):
            return result
        raise InvalidRequestError(f"storage command rejected: {result.reason}")
