"""One seal or unseal at a time, and nothing reported halfway through one.

Sealing unloads mounts, stops replication and detaches Raft over many awaits. An
unseal (or a seal-status read) that ran in between saw a half-sealed node: the
unseal failed with a 500 or was undone by the rest of the seal. The guard makes
seal and unseal exclusive, as the reference's state lock does: an unseal or a
seal-status read waits for a seal in progress, for a bounded time, and then
answers a clear 503 rather than reading a state that is about to change.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from sdk.errors import SealedError

#: How long an unseal or a status read waits for a seal (or unseal) in progress.
DEFAULT_WAIT = 30.0


class SealInProgressError(SealedError):
    """A seal or unseal did not finish within the wait; the caller retries."""

    def __init__(self) -> None:
        super().__init__("a seal or unseal is in progress on this node; retry shortly")


class SealGuard:
    """The lock seal and unseal hold from start to finish."""

    def __init__(self, wait: float = DEFAULT_WAIT) -> None:
        self.wait = wait
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    @contextlib.asynccontextmanager
    async def hold(self, bounded: bool = True) -> AsyncIterator[None]:
        """``bounded``: give up with a 503 after ``wait`` seconds (a seal itself waits)."""
        if bounded:
            try:
                # asyncio.timeout: Python 3.11's wait_for can swallow the caller's
                # cancellation (node/replication/DESIGN.md, "A stopped session stops").
                async with asyncio.timeout(self.wait):
                    await self._lock.acquire()
            except TimeoutError:
                raise SealInProgressError() from None
        else:
            await self._lock.acquire()
        try:
            yield
        finally:
            self._lock.release()

    async def settled(self) -> None:
        """Return once no seal or unseal is running (bounded)."""
        if self.busy:
            async with self.hold():
                pass

    async def run_soon(self, delay: float, action: Callable[[], Awaitable[None]]) -> None:
        """Take the lock now and run ``action`` after ``delay`` (so an answer can leave
        first): from this call on, unseals and status reads wait for ``action``."""
        await self._lock.acquire()

        async def later() -> None:
            try:
                await asyncio.sleep(delay)
                await action()
            finally:
                self._lock.release()

        task = asyncio.create_task(later(), name="seal-soon")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
