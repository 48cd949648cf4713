"""Prometheus metrics of one node, in a registry of its own (tests stay isolated)."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "coffer_http_requests",
            "HTTP requests handled, by method and status code.",
            ["method", "code"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "coffer_request_duration_seconds",
            "Time to handle one request through the core pipeline.",
            ["operation"],
            registry=self.registry,
        )
        self.unsealed = Gauge(
            "coffer_core_unsealed", "1 when this node is unsealed.", registry=self.registry
        )
        self.started = Gauge(
            "coffer_process_start_time_seconds",
            "Unix time this node started.",
            registry=self.registry,
        )
        self.started.set(time.time())

    def prometheus_text(self) -> bytes:
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
