"""statsd/DogStatsD pushes over a real UDP socket, and Prometheus retention."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from node.observability.metrics import Metrics
from node.observability.statsd import MAX_DATAGRAM, StatsdPusher
from tests.conftest import DevServer

#: Generous upper bound on waiting for a datagram on loopback (not a timing assertion).
WAIT = 10.0


class _Collector(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.packets: asyncio.Queue[bytes] = asyncio.Queue()

    def datagram_received(self, data: bytes, addr: object) -> None:
        self.packets.put_nowait(data)


@pytest.fixture
async def agent() -> AsyncIterator[tuple[str, _Collector]]:
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_datagram_endpoint(
        _Collector, local_addr=("127.0.0.1", 0)
    )
    host, port = transport.get_extra_info("sockname")[:2]
    try:
        yield f"{host}:{port}", protocol
    finally:
        transport.close()


async def _lines_until(collector: _Collector, wanted: str) -> list[str]:
    seen: list[str] = []
    for _ in range(1000):  # the pusher also sends gauges every interval
        if any(wanted in line for line in seen):
            return seen
        packet = await asyncio.wait_for(collector.packets.get(), WAIT)
        assert len(packet) <= MAX_DATAGRAM
        seen += packet.decode().split("\n")
    raise AssertionError(f"{wanted!r} never arrived; last lines: {seen[-5:]}")


async def test_statsd_push_sends_counter_deltas_and_gauges(
    agent: tuple[str, _Collector],
) -> None:
    address, collector = agent
    metrics = Metrics()
    metrics.count_request("GET", 200)
    metrics.count_request("GET", 200)
    metrics.unsealed.set(1)
    pusher = StatsdPusher(metrics, address, interval=0.05)
    await pusher.start()
    try:
        lines = await _lines_until(collector, "coffer_http_requests_total.GET.200")
        assert "coffer_http_requests_total.GET.200:2|c" in lines
        assert "coffer_core_unsealed:1|g" in lines
        metrics.count_request("GET", 200)
        lines = await _lines_until(collector, "coffer_http_requests_total.GET.200")
        assert "coffer_http_requests_total.GET.200:1|c" in lines
    finally:
        await pusher.stop()


async def test_dogstatsd_push_uses_tags(agent: tuple[str, _Collector]) -> None:
    address, collector = agent
    metrics = Metrics()
    metrics.count_request("PUT", 204)
    pusher = StatsdPusher(metrics, address, dogstatsd=True, tags=["env:test"], interval=0.05)
    await pusher.start()
    try:
        lines = await _lines_until(collector, "coffer_http_requests_total:")
        assert "coffer_http_requests_total:1|c|#env:test,method:PUT,code:204" in lines
    finally:
        await pusher.stop()


def test_lines_are_batched_into_small_datagrams() -> None:
    metrics = Metrics()
    for code in range(200, 600):
        metrics.count_request("GET", code)
    pusher = StatsdPusher(metrics, "127.0.0.1:9")
    packets = pusher._packets(pusher.lines())
    assert len(packets) > 1
    assert all(len(packet) <= MAX_DATAGRAM for packet in packets)


def test_prometheus_retention_forgets_idle_series() -> None:
    metrics = Metrics()
    metrics.retention = 60
    metrics.count_request("GET", 200)
    metrics.observe_operation("read", 0.01)
    assert b'method="GET"' in metrics.prometheus_text()
    metrics.expire(now=10**12)
    text = metrics.prometheus_text()
    assert b'method="GET"' not in text and b'operation="read"' not in text
    metrics.count_request("GET", 200)  # a new series starts again from zero
    assert b'coffer_http_requests_total{code="200",method="GET"} 1.0' in metrics.prometheus_text()


def test_retention_zero_disables_prometheus() -> None:
    metrics = Metrics()
    metrics.retention = 0
    assert not metrics.prometheus_enabled


async def test_sys_metrics_prometheus_off_when_retention_is_zero(dev: DevServer) -> None:
    dev.core.metrics.retention = 0
    resp = await dev.client.get("/v1/sys/metrics?format=prometheus", headers=dev.auth)
    assert resp.status == 400
    assert "prometheus is not enabled" in (await resp.json())["errors"][0]
    resp = await dev.client.get("/v1/sys/metrics", headers=dev.auth)
    assert resp.status == 200
