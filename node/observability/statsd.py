"""Pushes this node's metrics to statsd or DogStatsD over UDP.

``telemetry { statsd_address = "..." }`` and ``dogstatsd_addr`` make the
server send, every ``interval`` seconds, one line per series: counters as the
increase since the previous push (``|c``), gauges as their value (``|g``),
histograms as the increase of their count and sum. Plain statsd has no tags,
so label values are appended to the name (``coffer_http_requests_total.GET.200``);
DogStatsD gets them as tags (``|#method:GET,code:200``) plus the configured
``dogstatsd_tags``. Lines are batched into datagrams of at most
:data:`MAX_DATAGRAM` bytes. UDP is fire-and-forget: an agent that is down
costs nothing but the lost datagrams.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Iterable

from node.observability.metrics import Metrics

__all__ = ["MAX_DATAGRAM", "StatsdPusher", "split_host_port"]

log = logging.getLogger("coffer.telemetry")

#: Bytes per datagram: fits an Ethernet MTU with IP and UDP headers to spare.
MAX_DATAGRAM = 1400
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def split_host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def _clean(text: str) -> str:
    return _UNSAFE.sub("_", text)


class StatsdPusher:
    def __init__(
        self,
        metrics: Metrics,
        address: str,
        *,
        dogstatsd: bool = False,
        tags: Iterable[str] = (),
        interval: float = 1.0,
    ) -> None:
        self._metrics = metrics
        self._address = split_host_port(address)
        self._dogstatsd = dogstatsd
        self._tags = list(tags)
        self._interval = interval
        self._last: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._transport: asyncio.DatagramTransport | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, remote_addr=self._address
        )
        self._task = loop.create_task(self._run(), name="coffer-statsd")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._transport is not None:
            self.push()  # what changed since the last interval
            self._transport.close()
            self._transport = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                self.push()
            except Exception:  # noqa: BLE001 - telemetry must never take the server down
                log.warning("statsd push failed", extra={"event": "telemetry.push_failed"})

    def push(self) -> None:
        if self._transport is None:
            return
        for packet in self._packets(self.lines()):
            self._transport.sendto(packet)

    def lines(self) -> list[str]:
        """The lines of one push (counters as deltas since the previous call)."""
        lines: list[str] = []
        for family in self._metrics.registry.collect():
            for sample in family.samples:
                name = sample.name
                if name.endswith(("_created", "_bucket")):
                    continue
                labels = tuple(sample.labels.items())
                if family.type == "gauge":
                    lines.append(self._line(name, labels, sample.value, "g"))
                    continue
                key = (name, labels)
                delta = sample.value - self._last.get(key, 0.0)
                self._last[key] = sample.value
                if delta:
                    lines.append(self._line(name, labels, delta, "c"))
        return lines

    def _line(self, name: str, labels: tuple[tuple[str, str], ...], value: float, kind: str) -> str:
        number = f"{value:.6f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
        if not self._dogstatsd:
            suffix = "".join(f".{_clean(v)}" for _, v in labels)
            return f"{_clean(name)}{suffix}:{number}|{kind}"
        tags = [*self._tags, *(f"{_clean(k)}:{_clean(v)}" for k, v in labels)]
        line = f"{_clean(name)}:{number}|{kind}"
        return f"{line}|#{','.join(tags)}" if tags else line

    @staticmethod
    def _packets(lines: list[str]) -> list[bytes]:
        packets: list[bytes] = []
        current = b""
        for line in lines:
            data = line.encode()
            if current and len(current) + 1 + len(data) > MAX_DATAGRAM:
                packets.append(current)
                current = b""
            current = data if not current else current + b"\n" + data
        if current:
            packets.append(current)
        return packets
