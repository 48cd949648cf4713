"""Counters the consensus tests attach to a node's parts."""

from __future__ import annotations

from consensus.bridge import LoopBridge


class DrainCounter:
    """How many times ``bridge`` drained onto the loop (each drain is one wake-up)."""

    def __init__(self, bridge: LoopBridge) -> None:
        self.drains = 0
        self._real_drain = bridge._drain
        bridge._drain = self._drain  # type: ignore[method-assign]

    def _drain(self) -> None:
        self.drains += 1
        self._real_drain()
