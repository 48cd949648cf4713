"""Group commit on the event loop: concurrent transactions share one Raft entry.

Every Raft entry costs the same whatever it carries: a journal record and its
share of an fsync, one AppendEntries per follower (encoded and encrypted),
an acknowledgement back, a commit, an apply and a callback through the loop
bridge. :class:`CommitBatcher` queues each :class:`~consensus.commands.Txn`
and submits the queue as one :class:`~consensus.commands.Batch` entry, so those
costs are paid once per batch instead of once per write.

When a batch is sent: at the loop's next turn (``call_soon``) while fewer than
``max_in_flight`` of this node's batches await their commit; otherwise when
one of them completes. A lone writer therefore never waits for a timer (its
transaction leaves on the next turn, as a plain version 1 entry), while under
load the writes that arrive during one commit round travel together in the
next: the batch size follows the load by itself.

Rules a batch keeps:

* **MAX_COMMAND_BYTES** and ``max_commands``: a batch never grows past them;
  the rest waits for the next one.
* **Own id, own result, own revision.** Inner commands keep their ids
  (replicas remember each, so a retry of one inner command alone is answered,
  never re-applied); each caller gets its own result, and each write its own
  revision (:mod:`consensus.state`), exactly as if every transaction had been
  an entry of its own, in queue order.

Restores and membership changes are never batched: they are sent at once, alone.

**Every attempt ends.** A pysyncobj callback may never fire (failover), so each
sent entry has one expiry timer: after ``expire_after`` seconds its callers'
futures that are still open get ``"timeout"``. Callers simply await their
future (no ``asyncio.wait`` and timer per write); a result that arrives after
the expiry is dropped, and the caller's retry with the same command id finds it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from consensus.bridge import FAIL_NAMES, LoopBridge
from consensus.commands import (
    BATCH_OVERHEAD,
    MAX_COMMAND_BYTES,
    Applied,
    Batch,
    BatchResult,
    Command,
    CommandError,
    Mismatch,
    Rejected,
    Result,
    Txn,
    decode_result,
    encode_batch,
    is_canonical,
)
from sdk.errors import StorageError
from sdk.timings import Timings

__all__ = ["CommitBatcher", "Outcome"]

log = logging.getLogger(__name__)

#: A decoded result, or why this attempt failed (a pysyncobj FAIL_REASON name).
Outcome = Result | str
#: ``submit(blob, callback, decoded)``: ``decoded`` is what the blob decodes to, or None.
Submit = Callable[[bytes, Callable[[Any, int], None], Command | Batch | None], None]

_SUCCESS = 0
_RESULTS = (Applied, Mismatch, Rejected, BatchResult)


@dataclass(slots=True)
class _Pending:
    blob: bytes
    future: asyncio.Future[Outcome]
    #: The command, if ``blob`` decodes back to exactly it (``is_canonical``).
    command: Command | None = None


@dataclass(slots=True)
class _Slot:
    """One sent batch counted against ``max_in_flight`` until released."""

    released: bool = False
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


class CommitBatcher:
    """Queues transactions on the loop and submits them as few entries (loop thread only)."""

    def __init__(
        self,
        submit: Submit,
        bridge: LoopBridge,
        loop: asyncio.AbstractEventLoop,
        *,
        max_in_flight: int,
        max_commands: int,
        release_after: float,
        expire_after: float,
        max_bytes: int = MAX_COMMAND_BYTES,
    ) -> None:
        self._submit = submit
        self._bridge = bridge
        self._loop = loop
        self._max_in_flight = max_in_flight
        self._max_commands = max_commands
        self._release_after = release_after
        self._expire_after = expire_after
        self._max_bytes = max_bytes
        self._queue: list[_Pending] = []
        self._in_flight = 0
        self._scheduled = False
        #: Entries submitted and commands carried, for tests and measurements.
        self.entries_sent = 0
        self.commands_sent = 0
        #: Submission to outcome of each entry that succeeded (read by ``sys/metrics``).
        self.commit_timings = Timings()

    def submit(self, command: Command, blob: bytes) -> asyncio.Future[Outcome]:
        """Send ``command`` (already encoded as ``blob``); the future never raises
        for a failed attempt, it carries the failure's name instead."""
        future: asyncio.Future[Outcome] = self._loop.create_future()
        pending = _Pending(blob, future, command if is_canonical(command) else None)
        if not isinstance(command, Txn) or self._max_commands <= 1:
            self._send([pending], blob, None)
            return future
        self._queue.append(pending)
        self._schedule()
        return future

    def close(self) -> None:
        queue, self._queue = self._queue, []
        for pending in queue:
            if not pending.future.done():
                pending.future.set_result("closed")

    # -- batching ------------------------------------------------------------------

    def _schedule(self) -> None:
        if not self._scheduled and self._in_flight < self._max_in_flight:
            self._scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        while self._queue and self._in_flight < self._max_in_flight:
            batch = self._take()
            blob = batch[0].blob if len(batch) == 1 else encode_batch([p.blob for p in batch])
            self._send(batch, blob, self._hold_slot())

    def _take(self) -> list[_Pending]:
        """The next batch: the head of the queue, as much as the limits allow."""
        size = BATCH_OVERHEAD - 1  # -1: n commands need n-1 commas
        taken = 0
        for pending in self._queue[: self._max_commands]:
            size += len(pending.blob) + 1
            if taken and size > self._max_bytes:
                break
            taken += 1
        batch, self._queue = self._queue[:taken], self._queue[taken:]
        return batch

    def _hold_slot(self) -> _Slot:
        slot = _Slot()
        self._in_flight += 1
        # A pysyncobj callback may never fire (failover): free the slot anyway,
        # the callers' own timeouts and retries take it from there.
        slot.timer = self._loop.call_later(self._release_after, self._release, slot)
        return slot

    def _release(self, slot: _Slot) -> None:
        if slot.released:
            return
        slot.released = True
        if slot.timer is not None:
            slot.timer.cancel()
        self._in_flight -= 1
        if self._queue:
            self._schedule()

    # -- submission and results ------------------------------------------------------

    def _send(self, batch: list[_Pending], blob: bytes, slot: _Slot | None) -> None:
        expiry = self._loop.call_later(self._expire_after, self._expire, batch)
        sent = time.perf_counter()

        def settle(result: Any, error: int) -> None:
            if error == _SUCCESS:
                self.commit_timings.observe(time.perf_counter() - sent)
            expiry.cancel()
            if slot is not None:
                self._release(slot)
            self._settle(batch, result, error)

        def callback(result: Any, error: int) -> None:  # on the Raft thread
            self._bridge.post(lambda: settle(result, error))

        decoded: Command | Batch | None = None
        if all(pending.command is not None for pending in batch):
            if len(batch) == 1:
                decoded = batch[0].command
            else:
                decoded = Batch(tuple(p.command for p in batch))  # type: ignore[misc]
        try:
            self._submit(blob, callback, decoded)
        except (OSError, TypeError) as exc:  # the node is stopping underneath us
            expiry.cancel()
            if slot is not None:
                self._release(slot)
            self._finish(batch, [repr(exc)] * len(batch))
            return
        self.entries_sent += 1
        self.commands_sent += len(batch)

    def _settle(self, batch: list[_Pending], raw: Any, error: int) -> None:
        if error != _SUCCESS:
            self._finish(batch, [FAIL_NAMES.get(error, str(error))] * len(batch))
            return
        try:
            # The replica hands over its result object (results never leave the
            # node); bytes are the encoded form of one.
            decoded = raw if isinstance(raw, _RESULTS) else decode_result(raw)
        except (CommandError, TypeError) as exc:
            failure = StorageError(f"undecodable raft result: {exc}")
            for pending in batch:
                if not pending.future.done():
                    pending.future.set_exception(failure)
            return
        if isinstance(decoded, BatchResult):
            if len(decoded.results) != len(batch):
                log.error("a batch of %d got %d results", len(batch), len(decoded.results))
                self._finish(batch, ["malformed batch result"] * len(batch))
                return
            self._finish(batch, list(decoded.results))
        else:  # a single command, or a batch rejected as a whole
            self._finish(batch, [decoded] * len(batch))

    @staticmethod
    def _expire(batch: list[_Pending]) -> None:
        for pending in batch:
            if not pending.future.done():
                pending.future.set_result("timeout")

    @staticmethod
    def _finish(batch: list[_Pending], outcomes: list[Outcome]) -> None:
        for pending, outcome in zip(batch, outcomes, strict=True):
            if not pending.future.done():
                pending.future.set_result(outcome)
