"""Unsealing by itself under an HSM seal: at start, and until the HSM answers.

The server starts serving sealed (``seal-status`` and health answer) and this
task keeps trying: the HSM or its token may come up after Coffer, and a Raft
joiner can only unseal once the leader has handed it the encrypted root key.
Each failure is logged with its reason (never a secret) and retried with
exponential backoff. A wrong setting (PIN, key label, library) is not retried:
``on_fatal`` gets it, and the server exits naming the setting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from node.seal.config import SealTypeMismatchError
from node.seal.pkcs11_settings import SealSettingsError
from sdk.errors import CofferError

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["AutoUnsealer"]

log = logging.getLogger("coffer.seal")

#: Errors no retry can fix: the configuration must change.
FATAL = (SealSettingsError, SealTypeMismatchError)


class AutoUnsealer:
    def __init__(
        self,
        core: Core,
        *,
        first_delay: float = 0.5,
        max_delay: float = 30.0,
        poll: float = 0.5,
        on_fatal: Callable[[CofferError], None] | None = None,
    ) -> None:
        self.core = core
        self.first_delay = first_delay
        self.max_delay = max_delay
        #: How often an uninitialised node looks for ``sys/init`` or a join.
        self.poll = poll
        self.on_fatal = on_fatal
        self.attempts = 0
        self._task: asyncio.Task[None] | None = None

    async def attempt(self) -> bool:
        """One try: True once unsealed, False while there is nothing to unseal yet."""
        if not self.core.barrier.sealed:
            return True
        if not await self.core.initialized():
            return False
        if await self.core.lifecycle.migration():
            log.warning(
                "seal migration configured: unseal with -migrate using the old seal's keys",
                extra={"event": "seal.migration_pending"},
            )
            return True  # the operators finish it; nothing to retry
        self.attempts += 1
        await self.core.unseal_with_stored_key()
        return True

    async def run(self) -> None:
        delay = self.first_delay
        while True:
            try:
                if await self.attempt():
                    return
                await asyncio.sleep(self.poll)
                continue
            except FATAL as exc:
                log.error(
                    "auto-unseal cannot work with this configuration",
                    extra={"event": "seal.auto_unseal_failed", "error": _reason(exc)},
                )
                if self.on_fatal is not None:
                    self.on_fatal(exc)
                return
            except CofferError as exc:
                self._log_retry(_reason(exc), delay)
            except Exception as exc:  # noqa: BLE001 - the node must keep trying to unseal
                self._log_retry(f"unexpected {type(exc).__name__}", delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_delay)

    @staticmethod
    def _log_retry(reason: str, delay: float) -> None:
        log.warning(
            "auto-unseal failed; retrying",
            extra={"event": "seal.auto_unseal_retry", "error": reason, "retry_in": delay},
        )

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="auto-unseal")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def _reason(exc: CofferError) -> str:
    return "; ".join(exc.messages) or type(exc).__name__
