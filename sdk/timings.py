"""Latency histograms recorded on a hot path and read when metrics are scraped.

The Raft thread times every journal fsync and the event loop every Raft round
(issue 16 measured both by hand: docs/performance.md, "Seventh pass"). A
``prometheus_client.Histogram`` takes a lock per observation and the layers
that record these (``consensus``) do not depend on Prometheus, so each
recorder here is a list of bucket counts written by one thread only and copied
by the scraper; a scrape may miss an observation in flight, never counts one twice.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Final

__all__ = ["BOUNDS", "HistogramSnapshot", "RaftTimings", "Timings"]

#: Upper bounds in seconds (Prometheus ``le``): an fsync takes 0.1 to 2 ms, a Raft
#: round 1 to 30 ms, a stalled disk or a lost majority seconds.
BOUNDS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """Cumulative counts per upper bound (the last is ``+Inf``) and the sum."""

    buckets: tuple[tuple[float, int], ...]
    total_seconds: float

    @property
    def count(self) -> int:
        return self.buckets[-1][1]


class Timings:
    """Durations observed by one thread, as bucket counts and a sum (``bounds``: the
    finite upper bounds, ascending; ``+Inf`` is added)."""

    __slots__ = ("_bounds", "_counts", "_total")

    def __init__(self, bounds: tuple[float, ...] = BOUNDS) -> None:
        self._bounds = bounds
        self._counts = [0] * (len(bounds) + 1)
        self._total = 0.0

    def observe(self, seconds: float) -> None:
        self._counts[bisect_left(self._bounds, seconds)] += 1
        self._total += seconds

    def snapshot(self) -> HistogramSnapshot:
        counts, total = list(self._counts), self._total
        cumulative, running = [], 0
        for bound, count in zip((*self._bounds, float("inf")), counts, strict=True):
            running += count
            cumulative.append((bound, running))
        return HistogramSnapshot(tuple(cumulative), total)


@dataclass(frozen=True, slots=True)
class RaftTimings:
    """What a running replica has measured since it started."""

    #: From a Raft entry's submission to its outcome on the event loop (the leader's
    #: commit and apply, or a forward to the leader and back), per entry.
    commit: HistogramSnapshot
    #: Each ``fdatasync`` of the Raft journal.
    fsync: HistogramSnapshot
    #: Entries submitted by this node and the writes they carried (batching).
    entries: int
    commands: int
