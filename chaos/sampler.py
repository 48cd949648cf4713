"""Polls every node's ``sys/health`` and ``sys/leader`` and records :class:`Sample`\\ s.

One thread per node, so a frozen or cut-off node (whose polls time out) never
delays the others: the per-fault measures need every node's state every ~0.2 s,
leadership changes after a heal included. Shared by both runners; each says how
to reach a node with a :data:`Probe`.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from chaos.checker import History
from chaos.measures import Sample
from harness.rest import call

__all__ = ["Probe", "Sampler", "port_probe"]

#: ``probe(timeout)`` -> (``sys/health`` code, ``sys/leader`` document or None).
Probe = Callable[[float], tuple[int, Mapping[str, Any] | None]]

#: ``sys/health`` codes of an unsealed node (active, performance standby, standby).
UNSEALED = (200, 473, 429)


def port_probe(port: int, alive: Callable[[], bool] = lambda: True) -> Probe:
    """A probe of the API on ``127.0.0.1:port``; ``alive() is False`` answers 0 at once."""

    def probe(timeout: float) -> tuple[int, Mapping[str, Any] | None]:
        if not alive():
            return 0, None
        code = call(port, "GET", "/v1/sys/health", timeout=timeout).status
        if code not in UNSEALED:
            return code, None
        reply = call(port, "GET", "/v1/sys/leader", timeout=timeout)
        doc = reply.json if reply.status == 200 else None
        return code, doc if isinstance(doc, dict) else None

    return probe


def _index(doc: Mapping[str, Any] | None, name: str) -> int | None:
    value = (doc or {}).get(name)
    return value if isinstance(value, int) else None


class Sampler:
    def __init__(
        self,
        probes: Mapping[str, Probe],
        history: History,
        t0: float,
        *,
        every: float = 0.2,
        timeout: float = 1.0,
    ) -> None:
        self.probes = dict(probes)
        self.history = history
        self.t0 = t0
        self.every = every
        self.timeout = timeout
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(name,), name=f"sampler-{name}", daemon=True)
            for name in self.probes
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout * 2 + 1)

    def _run(self, name: str) -> None:
        probe = self.probes[name]
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                code, doc = probe(self.timeout)
            except (OSError, http.client.HTTPException, ValueError):
                code, doc = 0, None
            is_self = (doc or {}).get("is_self")
            self.history.sample(
                Sample(
                    t=round(time.monotonic() - self.t0, 3),
                    node=name,
                    code=code,
                    applied=_index(doc, "raft_applied_index"),
                    committed=_index(doc, "raft_committed_index"),
                    is_self=is_self if isinstance(is_self, bool) else None,
                )
            )
            self._stop.wait(max(0.0, self.every - (time.monotonic() - started)))
