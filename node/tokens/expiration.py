"""Revokes tokens when their TTL runs out, on time rather than on next use.

A heap of (expiry, key) drives one background task. Renewals push a new
heap item; a stale item is recognised because the stored entry's expiry has
moved on. Lookups also refuse expired tokens, so a token is never honoured
late even if the task is behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import time

from node.tokens.entry import TokenEntry
from node.tokens.store import TokenStore
from sdk.errors import CofferError

__all__ = ["ExpirationManager"]

log = logging.getLogger("coffer.expiration")


class ExpirationManager:
    def __init__(self, store: TokenStore) -> None:
        self._store = store
        self._heap: list[tuple[float, str]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        store.on_create.append(self.schedule)

    async def start(self) -> None:
        """Load every expiring token and start the timer task (after unseal); a timer
        already running is stopped first, never left running beside the new one."""
        await self.stop()
        self._heap = [
            (e.expire_time, e.key) for e in await self._store.all_entries() if e.expire_time
        ]
        heapq.heapify(self._heap)
        self._task = asyncio.create_task(self._run(), name="token-expiration")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._heap.clear()

    def schedule(self, entry: TokenEntry) -> None:
        if entry.expire_time and entry.key:
            heapq.heappush(self._heap, (entry.expire_time, entry.key))
            self._wake.set()

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            delay = self._heap[0][0] - time.time() if self._heap else None
            if delay is None or delay > 0:
                # asyncio.timeout, not wait_for, which on Python 3.11 can swallow the
                # cancellation of ``stop`` when the event is set at the same moment.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                continue
            _, key = heapq.heappop(self._heap)
            try:
                await self._expire(key)
            except CofferError as exc:
                log.warning(
                    "token expiry failed; will retry",
                    extra={"event": "token.expire_failed", "error_type": type(exc).__name__},
                )
                heapq.heappush(self._heap, (time.time() + 5, key))

    async def _expire(self, key: str) -> None:
        entry = await self._store.get_by_key(key)
        if entry is None or not entry.expired():
            return
        revoked = await self._store.revoke_tree(entry)
        log.info("token expired", extra={"event": "token.expired", "revoked": revoked})
