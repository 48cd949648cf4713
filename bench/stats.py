"""Latency samples → exact percentiles (every sample is kept; no histogram buckets)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Summary", "percentile", "summarise"]


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already-sorted samples (``fraction`` in 0..1)."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class Summary:
    count: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float


def summarise(samples_s: Sequence[float]) -> Summary:
    """Latencies in seconds → a summary in milliseconds."""
    ordered = sorted(samples_s)
    if not ordered:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan)
    return Summary(
        count=len(ordered),
        p50_ms=percentile(ordered, 0.50) * 1e3,
        p90_ms=percentile(ordered, 0.90) * 1e3,
        p99_ms=percentile(ordered, 0.99) * 1e3,
        max_ms=ordered[-1] * 1e3,
        mean_ms=sum(ordered) / len(ordered) * 1e3,
    )
