"""Prometheus metrics of one node, in a registry of its own (tests stay isolated)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    GCCollector,
    Histogram,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from sdk.timings import HistogramSnapshot, RaftTimings, Timings

__all__ = ["CONTENT_TYPE_LATEST", "CacheStats", "Metrics", "RaftStats"]

#: (hits, misses, entries) of a cache, read when metrics are scraped.
CacheStats = Callable[[], tuple[int, int, int]]


class _CacheCollector(Collector):
    """Reads the counters a cache keeps itself: nothing is added to its hot path."""

    def __init__(self, stats: CacheStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        hits, misses, entries = self._stats()
        yield CounterMetricFamily(
            "coffer_cache_hit", "Barrier reads answered by the read cache.", value=hits
        )
        yield CounterMetricFamily(
            "coffer_cache_miss", "Barrier reads that went to storage.", value=misses
        )
        yield GaugeMetricFamily(
            "coffer_cache_entries", "Decrypted values held in the read cache.", value=entries
        )


#: The running replica's timings, or None (no Raft storage, or sealed).
RaftStats = Callable[[], RaftTimings | None]


def _le_buckets(snapshot: HistogramSnapshot) -> list[tuple[str, int]]:
    """``le`` as prometheus_client writes its own: "0.0001", "1.0", "+Inf"."""
    return [
        ("+Inf" if math.isinf(bound) else repr(bound), count) for bound, count in snapshot.buckets
    ]


def _histogram(name: str, documentation: str, snapshot: HistogramSnapshot) -> Metric:
    return HistogramMetricFamily(
        name, documentation, buckets=_le_buckets(snapshot), sum_value=snapshot.total_seconds
    )


class _RaftCollector(Collector):
    """Reads what the replica records itself (``sdk/timings.py``), at scrape time."""

    def __init__(self, stats: RaftStats) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        timings = self._stats()
        if timings is None:
            return
        yield _histogram(
            "coffer_raft_commit_seconds",
            "From a Raft entry's submission by this node to its outcome (commit and "
            "apply on the leader), per entry.",
            timings.commit,
        )
        yield _histogram(
            "coffer_raft_fsync_seconds", "Each fdatasync of the Raft journal.", timings.fsync
        )
        yield CounterMetricFamily(
            "coffer_raft_entries", "Raft entries submitted by this node.", value=timings.entries
        )
        yield CounterMetricFamily(
            "coffer_raft_commands",
            "Writes carried by the Raft entries this node submitted (batching).",
            value=timings.commands,
        )


#: ``le`` bounds of the pipeline's timings: prometheus_client's defaults, as before.
_BOUNDS = tuple(bound for bound in Histogram.DEFAULT_BUCKETS if not math.isinf(bound))


class _RequestCollector(Collector):
    """HTTP requests by method and code, and the pipeline's time by operation, kept
    as plain numbers on the request path and made into families when scraped. A
    Prometheus child's ``inc`` and ``observe`` take a lock each and cost ~2 µs a
    request together, ~1 % of a KV read. Only the event loop's thread counts;
    a scrape from another thread reads copies. Both label sets are small and
    bounded (known methods, status codes, operations)."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, int], int] = {}
        self.timings: dict[str, Timings] = {}
        #: When each series last changed (``Metrics.expire``).
        self.touched: dict[tuple[str, int] | str, float] = {}

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "coffer_http_requests",
            "HTTP requests handled, by method and status code.",
            labels=["method", "code"],
        )
        for (method, status), count in list(self.requests.items()):
            requests.add_metric([method, str(status)], count)
        yield requests
        timings = HistogramMetricFamily(
            "coffer_request_duration_seconds",
            "Time to handle one request through the core pipeline.",
            labels=["operation"],
        )
        for operation, recorded in list(self.timings.items()):
            snapshot = recorded.snapshot()
            timings.add_metric([operation], _le_buckets(snapshot), snapshot.total_seconds)
        yield timings

    def forget(self, key: tuple[str, int] | str) -> None:
        self.touched.pop(key, None)
        if isinstance(key, tuple):
            self.requests.pop(key, None)
        else:
            self.timings.pop(key, None)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        #: ``telemetry.prometheus_retention_time``: a labelled series not updated for
        #: this long leaves the output; 0 turns the Prometheus format off.
        self.retention = 24 * 3600
        self._requests = _RequestCollector()
        self.registry.register(self._requests)
        self.unsealed = Gauge(
            "coffer_core_unsealed", "1 when this node is unsealed.", registry=self.registry
        )
        self.started = Gauge(
            "coffer_process_start_time_seconds",
            "Unix time this node started.",
            registry=self.registry,
        )
        self.started.set(time.time())
        # python_gc_*: collections per generation, read from ``gc.get_stats()`` at
        # scrape time (the collector's settings: api/gc_tuning.py).
        GCCollector(registry=self.registry)

    def watch_cache(self, stats: CacheStats) -> None:
        """Export a cache's hit and miss counts and size (Vault's ``cache.hit``/``miss``)."""
        self.registry.register(_CacheCollector(stats))

    def watch_raft(self, stats: RaftStats) -> None:
        """Export the replica's commit and fsync latencies and its batching (Vault's
        ``raft.commitTime``, ``raft.fsm.apply`` family)."""
        self.registry.register(_RaftCollector(stats))

    def count_request(self, method: str, status: int) -> None:
        """One HTTP request answered with ``status`` (``method`` already bounded)."""
        stats = self._requests
        key = (method, status)
        stats.requests[key] = stats.requests.get(key, 0) + 1
        stats.touched[key] = time.monotonic()

    def observe_operation(self, operation: str, seconds: float) -> None:
        """One pass of a logical ``operation`` through the core pipeline."""
        stats = self._requests
        recorded = stats.timings.get(operation)
        if recorded is None:
            recorded = stats.timings[operation] = Timings(_BOUNDS)
        recorded.observe(seconds)
        stats.touched[operation] = time.monotonic()

    @property
    def prometheus_enabled(self) -> bool:
        return self.retention > 0

    def expire(self, now: float | None = None) -> None:
        """Drop the labelled series not updated within :attr:`retention`, as the
        reference's Prometheus sink forgets them."""
        if self.retention <= 0:
            return
        cutoff = (time.monotonic() if now is None else now) - self.retention
        for key, at in list(self._requests.touched.items()):
            if at < cutoff:
                self._requests.forget(key)

    def prometheus_text(self) -> bytes:
        self.expire()
        return generate_latest(self.registry)

    def as_json(self) -> dict[str, Any]:
        """The reference's JSON shape: gauges, counters and samples."""
        gauges: list[dict[str, Any]] = []
        counters: list[dict[str, Any]] = []
        samples: list[dict[str, Any]] = []
        for family in self.registry.collect():
            for sample in family.samples:
                item = {"Name": sample.name, "Labels": dict(sample.labels), "Value": sample.value}
                if family.type == "gauge":
                    gauges.append(item)
                elif family.type == "counter":
                    counters.append(item)
                else:
                    samples.append(item)
        return {
            "Timestamp": time.strftime("%Y-%m-%d %H:%M:%S +0000 UTC", time.gmtime()),
            "Gauges": gauges,
            "Counters": counters,
            "Samples": samples,
            "Points": [],
        }
