"""Polls every node's ``sys/health`` and keeps a timeline of who reports itself active.

The workload asks it which nodes serve (to spread requests over them) and which
node is active (for strong reads); the scenarios ask it when a new active node
appeared (failover) and when a deposed one stopped claiming to be active.
"""

from __future__ import annotations

import http.client
import threading
import time

from chaos.checker import History
from harness.cluster import SERVING, Cluster, Node

__all__ = ["Monitor"]


class Monitor:
    def __init__(self, cluster: Cluster, history: History, t0: float, every: float = 0.1) -> None:
        self.cluster = cluster
        self.history = history
        self.t0 = t0
        self.every = every
        self._codes: dict[str, int] = {}
        #: (time, nodes reporting 200), appended whenever that set changes.
        self.timeline: list[tuple[float, frozenset[str]]] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-monitor", daemon=True)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> None:
        self._poll()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    # -- polling ---------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._poll()

    def _poll(self) -> None:
        codes: dict[str, int] = {}
        for node in self.cluster.nodes:
            code = 0
            if node.running:
                try:
                    code = node.health(timeout=1.0)
                except (OSError, http.client.HTTPException):
                    code = 0
            codes[node.name] = code
        at = self.now()
        active = frozenset(name for name, code in codes.items() if code == 200)
        with self._changed:
            self._codes = codes
            if not self.timeline or self.timeline[-1][1] != active:
                self.timeline.append((at, active))
                self.history.event(at, "active", nodes=sorted(active))
            self._changed.notify_all()

    # -- queries ---------------------------------------------------------------------

    def codes(self) -> dict[str, int]:
        with self._lock:
            return dict(self._codes)

    def active_nodes(self) -> list[Node]:
        codes = self.codes()
        return [n for n in self.cluster.nodes if codes.get(n.name) == 200]

    def serving_nodes(self) -> list[Node]:
        """Nodes last seen unsealed and answering (active or standby)."""
        codes = self.codes()
        return [n for n in self.cluster.nodes if codes.get(n.name) in SERVING and n.running]

    def wait_for(self, since: float, timeout: float, *, other_than: set[str]) -> float | None:
        """When (run time) a node not in ``other_than`` was first seen active after ``since``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for at, active in self.timeline:
                    if at >= since and active - other_than:
                        return at
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)

    def wait_not_active(self, name: str, since: float, timeout: float) -> float | None:
        """When ``name`` was first seen not active after ``since``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for at, active in self.timeline:
                    if at >= since and name not in active:
                        return at
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)

    def dual_active_seconds(self) -> float:
        """How long more than one node reported itself active at once (as polled)."""
        total = 0.0
        end = self.now()
        with self._lock:
            points = list(self.timeline)
        for (at, active), (after, _) in zip(points, [*points[1:], (end, frozenset())], strict=True):
            if len(active) > 1:
                total += after - at
        return round(total, 2)
