"""Handing results from the Raft thread to the asyncio event loop.

pysyncobj fires callbacks on its own thread. Nothing there may touch the
loop except through ``loop.call_soon_threadsafe``; this bridge batches: the
Raft thread appends work to a list and schedules one drain per batch, so a
burst of thousands of commits costs a handful of loop wake-ups.

The thread that calls :meth:`LoopBridge.flush` (the Raft thread, before it
blocks and after each tick) wakes the loop only there: a tick's change reports,
commit callbacks and applied index reach the loop in one drain, and the loop
does not take the GIL while that thread still sends the tick's messages.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["FAIL_NAMES", "IndexWaiters", "LoopBridge", "RaftReply"]

log = logging.getLogger(__name__)

#: (result, FAIL_REASON) as pysyncobj passes them to a callback.
RaftReply = tuple[Any, int]

#: pysyncobj.FAIL_REASON values, for error messages.
FAIL_NAMES = {
    0: "SUCCESS",
    1: "QUEUE_FULL",
    2: "MISSING_LEADER",
    3: "DISCARDED",
    4: "NOT_LEADER",
    5: "LEADER_CHANGED",
    6: "REQUEST_DENIED",
    7: "UNKNOWN_OUTCOME",
}


class LoopBridge:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: list[Callable[[], None]] = []
        self._scheduled = False
        self._closed = False
        #: The thread whose posts wait for its next :meth:`flush` (the object, not
        #: its ident: a finished thread's ident is given to the next one).
        self._flusher: threading.Thread | None = None

    def post(self, work: Callable[[], None]) -> None:
        """Run ``work`` on the loop soon (callable from any thread)."""
        with self._lock:
            if self._closed:
                return
            self._pending.append(work)
            if self._scheduled or threading.current_thread() is self._flusher:
                return
            self._scheduled = True
        self._wake_loop()

    def flush(self) -> None:
        """Wake the loop for what this thread posted since its last flush.

        From the first call on, this thread's posts wait for its next flush.
        """
        self._flusher = threading.current_thread()
        with self._lock:
            if self._closed or self._scheduled or not self._pending:
                return
            self._scheduled = True
        self._wake_loop()

    def _wake_loop(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed; nobody is waiting any more
            with self._lock:
                self._closed = True

    def callback(self) -> tuple[asyncio.Future[RaftReply], Callable[[Any, int], None]]:
        """A future and the pysyncobj callback that completes it."""
        future: asyncio.Future[RaftReply] = self._loop.create_future()

        def settle(result: Any, error: int) -> None:
            if not future.done():
                future.set_result((result, error))

        return future, lambda result, error: self.post(lambda: settle(result, error))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._pending.clear()

    def _drain(self) -> None:
        with self._lock:
            batch, self._pending, self._scheduled = self._pending, [], False
        for work in batch:
            try:
                work()
            except Exception:
                log.exception("raft completion failed")


class IndexWaiters:
    """Futures waiting for the applied index to reach a value (loop thread only)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._counter = itertools.count()

    def add(self, index: int) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (index, next(self._counter), future))
        return future

    def advance(self, applied: int) -> None:
        while self._heap and self._heap[0][0] <= applied:
            _, _, future = heapq.heappop(self._heap)
            if not future.done():
                future.set_result(None)
        # Drop abandoned (timed-out) waiters so the heap cannot grow forever.
        if len(self._heap) > 1024:
            self._heap = [item for item in self._heap if not item[2].done()]
            heapq.heapify(self._heap)

    def fail_all(self, error: Exception) -> None:
        for _, _, future in self._heap:
            if not future.done():
                future.set_exception(error)
        self._heap.clear()
