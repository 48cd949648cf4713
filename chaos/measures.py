"""Per-fault measures, and the thresholds a chaos run must meet.

Pure arithmetic on what a runner recorded (no clock, no I/O), so the unit tests can
pin it on hand-made histories. A runner says when each fault started and when it
was healed (a :class:`Fault`), and a poller records every node's ``sys/health``
code and ``sys/leader`` indexes every ~0.2 s (:class:`Sample`). For each fault:

* **Write unavailability**: the longest gap between consecutive acknowledged
  writes (any key, any writer) that overlaps the fault and its observation,
  ``[start, until]``: a stall while a rejoining node disrupts the cluster belongs
  to its fault as much as the failover does. The first and last write of the run
  bound the gaps, so a cluster that never acknowledges again counts until the
  load stopped.
* **Leadership changes after the heal**: the active node is the one node whose
  latest ``sys/health`` answer is 200 (two such nodes, or none, name no one). The
  count is how many times that node changed after ``healed``, starting from the
  last one named at or before ``healed`` (if none was, the first one named after
  does not count).
* **Catch-up**: a node is caught up once its ``raft_applied_index`` has reached
  the highest index (applied or committed, whichever is higher: the two count
  differently) any self-reported leader gave at least :data:`CATCH_UP_GRACE`
  seconds earlier (replication under load always lags a little); the measure is
  when the last node got there, after ``healed``.
* **Staleness**: for each any-node read that returned a superseded version, how
  long before the read was sent a newer version had been acknowledged; the
  measure is the largest among reads sent between the fault and the end of its
  observation.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CATCH_UP_GRACE",
    "Fault",
    "FaultMeasures",
    "Sample",
    "Thresholds",
    "active_timeline",
    "caught_up",
    "evaluate",
    "leader_changes",
    "longest_gap",
    "measure",
]

#: How far behind the leader's commit index a node may be, in time, and count as caught up.
CATCH_UP_GRACE = 0.5


@dataclass(frozen=True, slots=True)
class Sample:
    """One poll of one node, timed when the answer came (seconds since the run began)."""

    t: float
    node: str
    #: ``sys/health`` status (0: no answer in time).
    code: int
    applied: int | None = None
    committed: int | None = None
    #: ``sys/leader``'s ``is_self`` (None: not asked, or no answer).
    is_self: bool | None = None


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault as injected: who, when it took effect, when it was undone."""

    name: str
    node: str
    start: float
    healed: float
    #: End of the observation after the heal (None: up to the last sample or write).
    until: float | None = None


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What a run must meet for every fault (``issue 13``'s bounds by default)."""

    unavailable_seconds: float = 3.0
    leader_changes_after_heal: int = 0
    catch_up_seconds: float = 10.0
    #: The oldest any-node read allowed, in seconds (match the cluster's standby bound).
    staleness_seconds: float = 5.0


@dataclass
class FaultMeasures:
    name: str
    node: str
    start: float
    healed: float
    observed_until: float
    unavailable_seconds: float = 0.0
    unavailable_window: tuple[float, float] | None = None
    #: (time, new active node) for every change after the heal.
    leader_changes: list[tuple[float, str]] = field(default_factory=list)
    #: Seconds from the heal until every node had caught up (None: not within the observation).
    catch_up_seconds: float | None = None
    lagging: list[str] = field(default_factory=list)
    max_staleness: float = 0.0

    @property
    def leader_changes_after_heal(self) -> int:
        return len(self.leader_changes)

    def summary(self) -> str:
        gap = self.unavailable_window
        where = f" (t={gap[0]:.2f}..{gap[1]:.2f}s)" if gap else ""
        caught = (
            f"{self.catch_up_seconds:.2f}s"
            if self.catch_up_seconds is not None
            else f"not within {self.observed_until - self.healed:.1f}s ({', '.join(self.lagging)})"
        )
        changes = ", ".join(f"{node} at t={at:.2f}s" for at, node in self.leader_changes[:8])
        return (
            f"fault {self.name} on {self.node or '-'} t={self.start:.2f}..{self.healed:.2f}s: "
            f"writes stopped {self.unavailable_seconds:.2f}s{where}; leadership changes after "
            f"heal: {self.leader_changes_after_heal}{f' ({changes})' if changes else ''}; "
            f"all caught up after {caught}; oldest any-node read {self.max_staleness:.2f}s"
        )


def longest_gap(
    acked_ends: Iterable[float], start: float, end: float, span: tuple[float, float]
) -> tuple[float, tuple[float, float] | None]:
    """The longest gap between acknowledgements (bounded by ``span``) overlapping [start, end]."""
    first, last = span
    points = [first, *sorted(t for t in acked_ends if first < t < last), last]
    longest, where = 0.0, None
    for before, after in itertools.pairwise(points):
        if after > start and before < end and after - before > longest:
            longest, where = after - before, (round(before, 3), round(after, 3))
    return round(longest, 3), where


def active_timeline(samples: Iterable[Sample]) -> list[tuple[float, frozenset[str]]]:
    """(time, nodes whose latest answer was 200), whenever that set changed."""
    latest: dict[str, int] = {}
    timeline: list[tuple[float, frozenset[str]]] = []
    for sample in sorted(samples, key=lambda s: s.t):
        latest[sample.node] = sample.code
        active = frozenset(node for node, code in latest.items() if code == 200)
        if not timeline or timeline[-1][1] != active:
            timeline.append((sample.t, active))
    return timeline


def leader_changes(
    samples: Iterable[Sample], after: float, until: float | None = None
) -> list[tuple[float, str]]:
    """Every change of the one active node in (after, until], as (time, new node)."""
    current: str | None = None
    changes: list[tuple[float, str]] = []
    for at, active in active_timeline(samples):
        if until is not None and at > until:
            break
        leader = next(iter(active)) if len(active) == 1 else None
        if leader is None or leader == current:
            continue
        if at > after and current is not None:
            changes.append((round(at, 3), leader))
        current = leader
    return changes


def caught_up(
    samples: Iterable[Sample],
    healed: float,
    until: float | None = None,
    grace: float = CATCH_UP_GRACE,
) -> tuple[float | None, list[str]]:
    """(seconds from ``healed`` until the last node caught up or None, the nodes that never did)."""
    ordered = sorted(samples, key=lambda s: s.t)
    times: list[float] = []
    commits: list[int] = []
    for sample in ordered:
        known = [i for i in (sample.applied, sample.committed) if i is not None]
        if sample.is_self and known:
            times.append(sample.t)
            commits.append(max(*known, commits[-1] if commits else 0))
    nodes = sorted({s.node for s in ordered})
    reached: dict[str, float] = {}
    for sample in ordered:
        if sample.t < healed or sample.node in reached or (until is not None and sample.t > until):
            continue
        if sample.applied is None:
            continue
        index = bisect.bisect_right(times, sample.t - grace)
        if sample.applied >= (commits[index - 1] if index else 0):
            reached[sample.node] = sample.t
    lagging = [node for node in nodes if node not in reached]
    if lagging or not reached:
        return None, lagging
    return round(max(reached.values()) - healed, 3), []


def measure(
    fault: Fault,
    *,
    acked_ends: Sequence[float],
    span: tuple[float, float],
    samples: Sequence[Sample],
    stale: Sequence[tuple[float, float]] = (),
) -> FaultMeasures:
    """Every measure of one fault; ``stale`` holds (read sent at, seconds superseded)."""
    until = fault.until
    if until is None:
        until = max([span[1], *(s.t for s in samples)])
    result = FaultMeasures(fault.name, fault.node, fault.start, fault.healed, round(until, 3))
    result.unavailable_seconds, result.unavailable_window = longest_gap(
        acked_ends, fault.start, until, span
    )
    result.leader_changes = leader_changes(samples, fault.healed, until)
    result.catch_up_seconds, result.lagging = caught_up(samples, fault.healed, until)
    result.max_staleness = round(
        max((age for at, age in stale if fault.start <= at <= until), default=0.0), 3
    )
    return result


def evaluate(
    faults: Iterable[FaultMeasures], thresholds: Thresholds, max_staleness: float
) -> list[str]:
    """What did not meet ``thresholds``, one line each ([] when all did)."""
    failures = []
    for m in faults:
        label = f"{m.name} on {m.node or '-'}"
        if m.unavailable_seconds > thresholds.unavailable_seconds:
            failures.append(
                f"{label}: writes stopped {m.unavailable_seconds:.2f}s "
                f"(bound {thresholds.unavailable_seconds:g}s)"
            )
        if m.leader_changes_after_heal > thresholds.leader_changes_after_heal:
            failures.append(
                f"{label}: {m.leader_changes_after_heal} leadership change(s) after the heal "
                f"(bound {thresholds.leader_changes_after_heal})"
            )
        if m.catch_up_seconds is None:
            failures.append(
                f"{label}: {', '.join(m.lagging) or 'a node'} not caught up in the "
                f"{m.observed_until - m.healed:.1f}s watched after the heal "
                f"(bound {thresholds.catch_up_seconds:g}s)"
            )
        elif m.catch_up_seconds > thresholds.catch_up_seconds:
            failures.append(
                f"{label}: every node caught up after {m.catch_up_seconds:.2f}s "
                f"(bound {thresholds.catch_up_seconds:g}s)"
            )
    if max_staleness > thresholds.staleness_seconds:
        failures.append(
            f"an any-node read was {max_staleness:.2f}s stale "
            f"(bound {thresholds.staleness_seconds:g}s)"
        )
    return failures
