"""What one scenario run holds while it injects its fault: settings, cluster, clocks, notes."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.checker import Fault, History, Thresholds
from chaos.process.firewall import Firewall
from chaos.process.monitor import Monitor
from chaos.process.verify import Isolation
from harness.cluster import Cluster, ClusterError, Node

__all__ = ["MOUNT", "Run", "Settings"]

#: The KV v2 mount every run writes to.
MOUNT = "chaos"


@dataclass(frozen=True, slots=True)
class Settings:
    nodes: int = 3
    #: Seconds of client load; the fault starts 15-30% of the way in.
    duration: float = 20.0
    keys: int = 4
    readers: int = 2
    #: Seeds the fault's timing and target; None: picked from the clock (and reported).
    seed: int | None = None
    #: Minimum load kept on after the cluster is whole again.
    settle: float = 2.0
    recovery_timeout: float = 90.0
    #: Where node data, logs and histories go; None: a temporary directory.
    workdir: Path | None = None
    #: Count stale reads a cut-off leader served while it still claimed to be active
    #: as regressions (see chaos.process.verify.demote_deposed_reads).
    strict_reads: bool = False
    #: How long a fault is held (None: each scenario's own default).
    fault_seconds: float | None = None
    #: Seconds the cluster is watched after a heal (leadership changes, catch-up).
    observe: float = 15.0
    #: How many Raft entries the log moves on while ``restart-behind``'s node is down.
    behind: int = 20_000
    #: The bounds every fault is measured against.
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: Fail the run when a threshold is not met (False: measure and report only).
    enforce_thresholds: bool = True
    #: Seconds a client waits for one request before it gives up (indeterminate) and
    #: moves on to the next node; a hung node holds a writer that long.
    client_timeout: float = 2.0
    #: More lines for every node's ``storage "raft"`` block (e.g. tuning options).
    extra_raft: str = ""

    @property
    def hold(self) -> float:
        """How long a node stays down or cut off in the first scenarios."""
        return self.fault_seconds or max(3.0, 0.3 * self.duration)

    def hold_for(self, default: float) -> float:
        """How long a suite scenario whose own default is ``default`` holds its fault."""
        return self.fault_seconds or default


@dataclass
class Run:
    cluster: Cluster
    monitor: Monitor
    firewall: Firewall
    history: History
    settings: Settings
    rng: random.Random
    t0: float
    fault_at: float | None = None
    failover_at: float | None = None
    recovered_at: float | None = None
    isolations: list[Isolation] = field(default_factory=list)
    #: Windows in which a node may still claim to be active without being it (a freeze):
    #: its strong reads are treated like a cut-off leader's (see verify.demote_deposed_reads).
    suspects: list[Isolation] = field(default_factory=list)
    #: Faults to measure (chaos.measures), each with its heal time.
    faults: list[Fault] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def event(self, what: str, **details: Any) -> float:
        at = self.now()
        self.history.event(at, what, **details)
        return at

    def fault(self, what: str, **details: Any) -> float:
        """Note a fault starting now; the first one is *the* fault time."""
        at = self.event(what, **details)
        if self.fault_at is None:
            self.fault_at = at
        return at

    def healed(self, name: str, node: str, start: float, healed: float) -> None:
        """Note a fault undone at ``healed``; it is watched for ``observe`` seconds more."""
        until = healed + self.settings.observe
        self.faults.append(Fault(name, node, round(start, 3), round(healed, 3), round(until, 3)))

    def observe(self) -> None:
        """Keep the load on until the last fault's observation is over."""
        if self.faults and self.faults[-1].until is not None:
            self.sleep_until(self.faults[-1].until)

    def sleep_until(self, at: float) -> None:
        left = at - self.now()
        if left > 0:
            time.sleep(left)

    def failover(self, since: float, *, other_than: set[str]) -> float:
        """Wait for a node not in ``other_than`` to report itself active; seconds taken."""
        seen = self.monitor.wait_for(since, self.settings.recovery_timeout, other_than=other_than)
        if seen is None:
            raise ClusterError(f"no new active node {self.settings.recovery_timeout:g}s after")
        if self.failover_at is None:
            self.failover_at = seen
        active = sorted(n.name for n in self.monitor.active_nodes())
        self.event("failover", seconds=round(seen - since, 3), active=active)
        return seen - since

    def bring_back(self, node: Node) -> None:
        """Start a stopped node from its data, unseal it, wait until it has caught up."""
        node.start()
        self.event("started", node=node.name)
        sealed = self.cluster.sealed(node)
        self.details.setdefault("came_back_sealed", {})[node.name] = sealed
        if not sealed:
            raise ClusterError(f"{node.name} came back unsealed: it should need the keys")
        self.unseal(node)
        # From unsealed to applied what the active node had applied by then.
        seconds = self.cluster.wait_caught_up(node, self.settings.recovery_timeout)
        self.details.setdefault("catch_up_seconds", {})[node.name] = round(seconds, 2)
        self.wait_whole()

    def unseal(self, node: Node) -> None:
        self.cluster.unseal(node, self.settings.recovery_timeout)
        self.event("unsealed", node=node.name)

    def wait_whole(self) -> None:
        self.cluster.wait_whole(self.settings.recovery_timeout)
        self.recovered_at = self.event("whole")
