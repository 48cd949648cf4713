"""The chaos checker: a recorded history of operations, and what it must satisfy.

Shared by every chaos runner (``chaos.compose`` drives containers; other runners may
drive processes). It knows nothing of Docker or HTTP: a runner records each
operation as an :class:`Op` in a :class:`History`, adds the final reads, and calls
:func:`check`.

The workload it expects: every key has one writer, which writes increasing integer
values (1, 2, 3, ...) one at a time and never reuses a value, even after a failure.
So for any key, a larger value is a later write, and:

* **Lost write**: the final value of a key (read from the active node once the
  cluster has recovered) is smaller than the last value whose write was
  acknowledged. A write that failed or timed out is *indeterminate*: it may or may
  not have been applied, so it never counts as lost and may legitimately be read.
* **Regression**: a *strong* read (one served by the active node) returned a value
  smaller than a value acknowledged before the read was sent, or smaller than what
  an earlier strong read (completed before this one was sent) returned. This is
  what a rolled-back write or a deposed leader serving reads looks like.
* **Phantom**: a read returned a value that was never written.
* **Divergence**: once recovered, some node's own replica holds a different final
  value than the active node.
* **Stale read** (reported, not a failure): an *any-node* read, which a performance
  standby may serve from its replica, returned a value older than one acknowledged
  before the read was sent. The cluster documents such reads as possibly stale by
  the replication lag; the report gives how many there were and how old the value
  they returned had been superseded.
* **Unavailability**: the longest stretch without an acknowledged write (the time
  without a writable active node, as a client sees it), plus the total of every
  stretch over one second.
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

__all__ = [
    "ANY",
    "FINAL",
    "STRONG",
    "CheckReport",
    "Finding",
    "History",
    "Op",
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


@dataclass
class History:
    """Thread-safe, append-only record of operations and events."""

    ops: list[Op] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
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

    def __iter__(self) -> Iterator[Op]:
        with self._lock:
            return iter(list(self.ops))

    def dump(self, path: Path) -> None:
        """JSON lines: events first, then every operation."""
        with self._lock:
            lines = [json.dumps({"type": "event", **e}) for e in self.events]
            lines += [json.dumps({"type": "op", **asdict(op)}) for op in self.ops]
        path.write_text("\n".join(lines) + "\n")

    @classmethod
    def load(cls, path: Path) -> History:
        history = cls()
        for line in path.read_text().splitlines():
            doc = json.loads(line)
            if doc.pop("type") == "event":
                history.events.append(doc)
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
    stale_reads: int = 0
    max_staleness: float = 0.0
    unavailable_seconds: float = 0.0
    unavailable_total: float = 0.0
    unavailable_window: tuple[float, float] | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.regressions or self.phantoms or self.divergent)

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["ok"] = self.ok
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
            f"stale any-node reads: {self.stale_reads} (value superseded for at most "
            f"{self.max_staleness:.2f}s)",
            f"unavailable: longest {self.unavailable_seconds:.2f}s without an acknowledged "
            f"write{window}; {self.unavailable_total:.2f}s in gaps over {DOWNTIME_GAP:g}s",
            f"verdict: {'OK' if self.ok else 'FAILED'}",
        ]
        lines += [f"  {f.kind}: {f.key}: {f.detail}" for f in self.findings[:20]]
        return "\n".join(lines)


class _Floor:
    """Per key: the highest value known before a given time (step function)."""

    def __init__(self, points: Iterable[tuple[float, int]]) -> None:
        # (time the value became known, value): running maximum over time.
        ordered = sorted(points)
        self.times: list[float] = []
        self.values: list[int] = []
        best = 0
        for at, value in ordered:
            if value > best:
                best = value
                self.times.append(at)
                self.values.append(value)

    def before(self, at: float) -> int:
        """The highest value known strictly before ``at`` (0 if none)."""
        index = bisect.bisect_left(self.times, at)
        return self.values[index - 1] if index else 0

    def known_since(self, value: int) -> float | None:
        """When a value greater than ``value`` first became known."""
        index = bisect.bisect_right(self.values, value)
        return self.times[index] if index < len(self.times) else None


def check(
    history: Iterable[Op],
    *,
    node_finals: Mapping[str, Mapping[str, int | None]] | None = None,
    window: tuple[float, float] | None = None,
) -> CheckReport:
    """Check a history. ``node_finals`` maps node -> key -> the value its replica holds
    after recovery; ``window`` limits the unavailability measure (default: the
    first to the last write sent)."""
    ops = list(history)
    report = CheckReport(operations=len(ops))
    writes: dict[str, list[Op]] = defaultdict(list)
    reads: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        (writes if op.kind == "write" else reads)[op.key].append(op)

    acked_ends: list[float] = []
    for key_writes in writes.values():
        for op in key_writes:
            report.writes += 1
            if op.ok:
                report.acknowledged += 1
                acked_ends.append(op.end)
            else:
                report.indeterminate += 1

    def find(kind: str, key: str, detail: str, op: Op | None = None) -> None:
        report.findings.append(Finding(kind, key, detail, None if op is None else op.id))

    for key in sorted(set(writes) | set(reads)):
        key_writes = writes.get(key, [])
        written = {op.value for op in key_writes if op.value is not None}
        acked = _Floor((op.end, op.value) for op in key_writes if op.ok and op.value is not None)
        last_acked = max((op.value for op in key_writes if op.ok and op.value), default=0)
        key_reads = sorted(reads.get(key, []), key=lambda op: op.end)
        # Strong reads so far, by completion time, with the running maximum value.
        observed_ends: list[float] = []
        observed_max: list[int] = []
        finals: list[Op] = []
        for op in key_reads:
            report.reads += 1
            if not op.ok:
                continue
            report.reads_ok += 1
            value = op.value or 0
            if op.value is not None and op.value not in written:
                report.phantoms += 1
                find("phantom", key, f"read {op.value}, which was never written", op)
                continue
            if op.consistency in (STRONG, FINAL):
                report.strong_reads += op.consistency == STRONG
                seen = bisect.bisect_left(observed_ends, op.start)
                floor = max(acked.before(op.start), observed_max[seen - 1] if seen else 0)
                if value < floor:
                    report.regressions += 1
                    find(
                        "regression",
                        key,
                        f"{op.consistency} read at t={op.start:.3f}s from {op.node or '?'} "
                        f"returned {op.value}, but {floor} was acknowledged or read before",
                        op,
                    )
                observed_ends.append(op.end)
                observed_max.append(max(value, observed_max[-1] if observed_max else 0))
                if op.consistency == FINAL:
                    finals.append(op)
            else:
                floor = acked.before(op.start)
                if value < floor:
                    report.stale_reads += 1
                    since = acked.known_since(value)
                    if since is not None:
                        report.max_staleness = max(report.max_staleness, op.start - since)
        if last_acked:
            final = finals[-1] if finals else None
            if final is None:
                report.lost += 1
                find("lost", key, f"no final read; last acknowledged value {last_acked}")
            elif (final.value or 0) < last_acked:
                report.lost += 1
                find("lost", key, f"final value {final.value} < last acknowledged {last_acked}")
            if final is not None and node_finals:
                for node, values in sorted(node_finals.items()):
                    if values.get(key) != final.value:
                        report.divergent += 1
                        find(
                            "divergent",
                            key,
                            f"{node} holds {values.get(key)}, the active node {final.value}",
                        )

    report.unavailable_seconds, report.unavailable_total, report.unavailable_window = _downtime(
        sorted(acked_ends), window or _span(ops)
    )
    report.max_staleness = round(report.max_staleness, 3)
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
