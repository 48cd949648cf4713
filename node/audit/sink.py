"""Where a device's lines go, and how a sink is chosen from the device's options."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Sink"]


class Sink(Protocol):
    """One destination. ``write`` raises ``OSError`` (or ``TimeoutError``) when the
    line was not recorded; the next ``write`` tries again from scratch, so a
    destination that recovers is used again without any operator action."""

    async def check(self) -> None:
        """Raise if the destination cannot be used now (run once, on enable)."""

    async def write(self, line: bytes) -> None: ...

    def reopen(self) -> None:
        """Let go of open files (SIGHUP, log rotation); the next write reopens."""

    async def close(self) -> None: ...
