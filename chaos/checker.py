"""The chaos checker: a recorded history of operations, and what it must satisfy.

Shared by every chaos runner (``chaos.compose`` drives containers; other runners may
drive processes). It knows nothing of Docker or HTTP: a runner records each
operation as an :class:`Op` in a :class:`History`, adds the final reads, and calls
:func:`check`.

The workload it expects: every key has one writer, which writes increasing integer
values (1, 2, 3, ...) one at a time and never reuses a value, even after a failure.
A write that failed or timed out is *indeterminate*: it may or may not have been
applied, and may even be applied long after the client gave up (a frozen node that
resumes can still forward a request it had buffered), so it never counts as lost and
reading its value is legitimate.

Operations are ordered per key by the *version* the server assigned (KV v2's
``metadata.version``, which is the order in which writes were applied); a runner that
has no versions leaves them None and the values order the writes instead.

* **Lost write**: the final version of a key (read from the active node after
  recovery) is older than the last acknowledged write's, or one version was seen with
  two different values (an acknowledged write was rolled back and its version
  handed out again).
* **Regression**: a *strong* read (served by the active node) returned a version
  older than one acknowledged before the read was sent, or older than what an
  earlier strong read (completed before this one was sent) returned.
* **Phantom**: a read returned a value that was never written.
* **Divergence**: once recovered, some node's own replica holds a different final
  value than the active node.
* **Late write** (reported, not a failure): a read returned the value of an
  indeterminate write that was applied after a newer value had been acknowledged.
* **Stale read** (reported, not a failure): an *any-node* read, which a performance
  standby may serve from its replica, returned a version older than one acknowledged
  before the read was sent. The cluster documents such reads as possibly stale by
  the replication lag; the report gives how many and how long the value they
  returned had been superseded.
* **Unavailability**: the longest stretch without an acknowledged write (the time
  without a writable active node, as a client sees it), plus the total of every
  stretch over one second.
* **Per fault** (when the runner passes its faults and its polls of every node):
  write unavailability, leadership changes after the heal, time until every node
  caught up, the oldest any-node read; and, with :class:`Thresholds`, which of
  them broke their bound (``threshold_failures``, apart from :attr:`CheckReport.ok`
  so that a run can tell "lost data" from "too slow"). The arithmetic is in
  :mod:`chaos.measures`.
"""

from __future__ import annotations

import bisect
import itertools
import json
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from chaos.measures import Fault, FaultMeasures, Sample, Thresholds, evaluate, measure

__all__ = [
    "ANY",
    "FINAL",
    "STRONG",
    "CheckReport",
    "Fault",
    "Finding",
    "History",
    "Op",
    "Sample",
    "Thresholds",
    "check",
]

Kind = Literal["write", "read"]
#: A read served by the active node (routed there on purpose).
STRONG = "strong"
#: A read the load balancer may send to any node, performance standbys included.
ANY = "any"
#: A read made after recovery, from the active node, for the lost-write check.
FINAL = "final"

#: Gaps between acknowledged writes longer than this add up to the total downtime.
DOWNTIME_GAP = 1.0


@dataclass(frozen=True, slots=True)
class Op:
    """One operation as the client saw it; times are seconds since the run started."""

    id: int
    kind: Kind
    key: str
    #: The value written, or the value read (None: the key did not exist).
    value: int | None
    start: float
    end: float
    #: A write was acknowledged (2xx); a read got an answer it could parse.
    ok: bool
    consistency: str = ""
    #: The node that answered, as the load balancer reports it ("" if unknown).
    node: str = ""
    status: int = 0
    error: str = ""
    #: The server's order for the write: assigned to an acknowledged write, or read.
    version: int | None = None

    @property
    def order(self) -> int:
        """Where this write (or the write a read saw) stands among the key's writes."""
        if self.version is not None:
            return self.version
        return self.value or 0


@dataclass
class History:
    """Thread-safe, append-only record of operations and events."""

    ops: list[Op] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    #: Polls of every node (health code, raft indexes), for the per-fault measures.
    samples: list[Sample] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _next: int = 0

    def record(self, **fields: Any) -> Op:
        with self._lock:
            op = Op(id=self._next, **fields)
            self._next += 1
            self.ops.append(op)
        return op

    def event(self, at: float, what: str, **details: Any) -> None:
        with self._lock:
            self.events.append({"t": round(at, 3), "event": what, **details})

    def sample(self, sample: Sample) -> None:
        with self._lock:
            self.samples.append(sample)

    def __iter__(self) -> Iterator[Op]:
        with self._lock:
            return iter(list(self.ops))

    def dump(self, path: Path) -> None:
        """JSON lines: events first, then every poll sample, then every operation."""
        with self._lock:
            lines = [json.dumps({"type": "event", **e}) for e in self.events]
            lines += [json.dumps({"type": "sample", **asdict(s)}) for s in self.samples]
            lines += [json.dumps({"type": "op", **asdict(op)}) for op in self.ops]
        path.write_text("\n".join(lines) + "\n")

    @classmethod
    def load(cls, path: Path) -> History:
        history = cls()
        for line in path.read_text().splitlines():
            doc = json.loads(line)
            kind = doc.pop("type")
            if kind == "event":
                history.events.append(doc)
            elif kind == "sample":
                history.samples.append(Sample(**doc))
            else:
                history.ops.append(Op(**doc))
        history._next = len(history.ops)
        return history


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    key: str
    detail: str
    op: int | None = None


@dataclass
class CheckReport:
    operations: int = 0
    writes: int = 0
    acknowledged: int = 0
    indeterminate: int = 0
    reads: int = 0
    reads_ok: int = 0
    strong_reads: int = 0
    lost: int = 0
    regressions: int = 0
    phantoms: int = 0
    divergent: int = 0
    late_writes: int = 0
    max_late_delay: float = 0.0
    stale_reads: int = 0
    max_staleness: float = 0.0
    unavailable_seconds: float = 0.0
    unavailable_total: float = 0.0
    unavailable_window: tuple[float, float] | None = None
    findings: list[Finding] = field(default_factory=list)
    #: One entry per fault the runner reported.
    faults: list[FaultMeasures] = field(default_factory=list)
    thresholds: Thresholds | None = None
    #: Bounds of ``thresholds`` that were not met (not part of :attr:`ok`).
    threshold_failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Safety: nothing lost, no regression, no phantom, no divergence."""
        return not (self.lost or self.regressions or self.phantoms or self.divergent)

    @property
    def thresholds_ok(self) -> bool:
        """Every fault met the thresholds (True when none were given)."""
        return not self.threshold_failures

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["ok"] = self.ok
        doc["thresholds_ok"] = self.thresholds_ok
        for entry in doc["faults"]:
            entry["leader_changes_after_heal"] = len(entry["leader_changes"])
        doc["findings"] = [asdict(f) for f in self.findings[:50]]
        return doc

    def summary(self) -> str:
        window = (
            f" (from t={self.unavailable_window[0]:.2f}s to t={self.unavailable_window[1]:.2f}s)"
            if self.unavailable_window
            else ""
        )
        lines = [
            f"operations:  {self.operations} ({self.writes} writes, {self.reads} reads, "
            f"{self.strong_reads} of them strong)",
            f"acknowledged writes: {self.acknowledged}  indeterminate: {self.indeterminate}",
            f"lost: {self.lost}  regressions: {self.regressions}  phantoms: {self.phantoms}  "
            f"divergent: {self.divergent}",
            f"late indeterminate writes seen: {self.late_writes} (applied up to "
            f"{self.max_late_delay:.2f}s after they were sent)",
            f"stale any-node reads: {self.stale_reads} (value superseded for at most "
            f"{self.max_staleness:.2f}s)",
            f"unavailable: longest {self.unavailable_seconds:.2f}s without an acknowledged "
            f"write{window}; {self.unavailable_total:.2f}s in gaps over {DOWNTIME_GAP:g}s",
            *(m.summary() for m in self.faults),
            *(f"threshold not met: {failure}" for failure in self.threshold_failures),
            f"verdict: {'OK' if self.ok else 'FAILED'}"
            + ("" if self.thresholds_ok else " (thresholds not met)"),
        ]
        lines += [f"  {f.kind}: {f.key}: {f.detail}" for f in self.findings[:20]]
        return "\n".join(lines)


class _Floor:
    """Per key: the highest order known before a given time (a step function)."""

    def __init__(self, points: Iterable[tuple[float, int]] = ()) -> None:
        self.times: list[float] = []
        self.orders: list[int] = []
        for at, order in sorted(points):
            self.add(at, order)

    def add(self, at: float, order: int) -> None:
        """Points must arrive in time order."""
        if not self.orders or order > self.orders[-1]:
            self.times.append(at)
            self.orders.append(order)

    def before(self, at: float) -> int:
        """The highest order known strictly before ``at`` (0 if none)."""
        index = bisect.bisect_left(self.times, at)
        return self.orders[index - 1] if index else 0

    def superseded_since(self, order: int) -> float | None:
        """When an order higher than ``order`` first became known."""
        index = bisect.bisect_right(self.orders, order)
        return self.times[index] if index < len(self.times) else None


def check(
    history: Iterable[Op],
    *,
    node_finals: Mapping[str, Mapping[str, int | None]] | None = None,
    window: tuple[float, float] | None = None,
    faults: Iterable[Fault] = (),
    samples: Iterable[Sample] = (),
    thresholds: Thresholds | None = None,
) -> CheckReport:
    """Check a history. ``node_finals`` maps node -> key -> the value its replica holds
    after recovery; ``window`` limits the unavailability measure (default: the
    first to the last write sent). ``faults`` and the node polls in ``samples`` give
    the per-fault measures, held to ``thresholds`` if given."""
    ops = list(history)
    report = CheckReport(operations=len(ops))
    writes: dict[str, list[Op]] = defaultdict(list)
    reads: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        (writes if op.kind == "write" else reads)[op.key].append(op)

    def find(kind: str, key: str, detail: str, op: Op | None = None) -> None:
        report.findings.append(Finding(kind, key, detail, None if op is None else op.id))

    acked_ends: list[float] = []
    stale: list[tuple[float, float]] = []  # (any-node read sent at, seconds superseded)
    for key in sorted(set(writes) | set(reads)):
        key_writes = writes.get(key, [])
        by_value = {op.value: op for op in key_writes if op.value is not None}
        acked = [op for op in key_writes if op.ok]
        report.writes += len(key_writes)
        report.acknowledged += len(acked)
        report.indeterminate += len(key_writes) - len(acked)
        acked_ends += [op.end for op in acked]
        acked_floor = _Floor((op.end, op.order) for op in acked)
        value_floor = _Floor((op.end, op.value or 0) for op in acked)
        last_acked = max(acked, key=lambda op: op.order, default=None)

        # One version, one value: a version seen with two values was handed out twice.
        seen: dict[int, tuple[int | None, Op]] = {}
        conflicted: set[int] = set()
        for op in sorted((*acked, *reads.get(key, [])), key=lambda op: op.end):
            if op.version is None or not op.ok or op.version in conflicted:
                continue
            first = seen.setdefault(op.version, (op.value, op))
            if first[0] != op.value:
                conflicted.add(op.version)
                report.lost += 1
                find(
                    "lost",
                    key,
                    f"version {op.version} was {first[0]} (op {first[1].id}) and later "
                    f"{op.value}: a write was rolled back and its version reused",
                    op,
                )

        observed = _Floor()  # strong reads, by completion time
        final: Op | None = None
        late: set[int] = set()
        for op in sorted(reads.get(key, []), key=lambda op: op.end):
            report.reads += 1
            if not op.ok:
                continue
            report.reads_ok += 1
            if op.value is not None and op.value not in by_value:
                report.phantoms += 1
                find("phantom", key, f"read {op.value}, which was never written", op)
                continue
            source = by_value.get(op.value) if op.value is not None else None
            if (
                source is not None
                and not source.ok
                and (op.value or 0) < value_floor.before(op.start)
                and op.order >= acked_floor.before(op.start)
                and op.value not in late
            ):
                late.add(op.value or 0)
                report.late_writes += 1
                report.max_late_delay = max(report.max_late_delay, op.end - source.start)
                find(
                    "late-write",
                    key,
                    f"indeterminate write of {op.value} (sent at t={source.start:.3f}s) "
                    f"was read at t={op.start:.3f}s, after "
                    f"{value_floor.before(op.start)} had been acknowledged",
                    op,
                )
            if op.consistency in (STRONG, FINAL):
                report.strong_reads += op.consistency == STRONG
                floor = max(acked_floor.before(op.start), observed.before(op.start))
                if op.order < floor:
                    report.regressions += 1
                    find(
                        "regression",
                        key,
                        f"{op.consistency} read at t={op.start:.3f}s via {op.node or '?'} "
                        f"returned {op.value} (order {op.order}), but order {floor} was "
                        "acknowledged or read before it was sent",
                        op,
                    )
                observed.add(op.end, op.order)
                if op.consistency == FINAL:
                    final = op
            elif op.order < acked_floor.before(op.start):
                report.stale_reads += 1
                since = acked_floor.superseded_since(op.order)
                if since is not None:
                    report.max_staleness = max(report.max_staleness, op.start - since)
                    stale.append((op.start, op.start - since))

        if last_acked is not None:
            if final is None:
                report.lost += 1
                find("lost", key, f"no final read; last acknowledged value {last_acked.value}")
            elif final.order < last_acked.order:
                report.lost += 1
                find(
                    "lost",
                    key,
                    f"final value {final.value} (order {final.order}) is older than the last "
                    f"acknowledged {last_acked.value} (order {last_acked.order})",
                )
            if final is not None and node_finals:
                for node, values in sorted(node_finals.items()):
                    if values.get(key) != final.value:
                        report.divergent += 1
                        find(
                            "divergent",
                            key,
                            f"{node} holds {values.get(key)}, the active node {final.value}",
                        )

    span = window or _span(ops)
    report.unavailable_seconds, report.unavailable_total, report.unavailable_window = _downtime(
        sorted(acked_ends), span
    )
    report.max_staleness = round(report.max_staleness, 3)
    report.max_late_delay = round(report.max_late_delay, 3)
    polls = list(samples)
    for fault in faults:
        report.faults.append(
            measure(fault, acked_ends=acked_ends, span=span, samples=polls, stale=stale)
        )
    if thresholds is not None:
        report.thresholds = thresholds
        report.threshold_failures = evaluate(report.faults, thresholds, report.max_staleness)
    return report


def _span(ops: list[Op]) -> tuple[float, float]:
    writes = [op for op in ops if op.kind == "write"]
    if not writes:
        return (0.0, 0.0)
    return (min(op.start for op in writes), max(op.start for op in writes))


def _downtime(
    acked_ends: list[float], window: tuple[float, float]
) -> tuple[float, float, tuple[float, float] | None]:
    """(longest gap, total of gaps over DOWNTIME_GAP, the longest gap's bounds)."""
    start, end = window
    points = [start, *(t for t in acked_ends if start < t < end), end]
    longest, total, where = 0.0, 0.0, None
    for before, after in itertools.pairwise(points):
        gap = after - before
        if gap > longest:
            longest, where = gap, (round(before, 3), round(after, 3))
        if gap > DOWNTIME_GAP:
            total += gap
    return round(longest, 3), round(total, 3), where
