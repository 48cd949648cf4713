"""A real server process with several ``listener "tcp"`` stanzas and a statsd
sink (issue 14): it answers on every listener and pushes metrics to a UDP
socket this test owns."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.ports import free_port
from harness.server import CofferFactory, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

#: Upper bound on waiting for the first datagram (a wait, not a timing assertion).
WAIT = 20.0


def test_every_listener_serves_and_metrics_reach_statsd(
    coffer: CofferFactory, tmp_path: Path
) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(WAIT)
    statsd_port = receiver.getsockname()[1]
    first, second = free_port(), free_port()
    text = f"""
listener "tcp" {{
  address     = "127.0.0.1:{first}"
  tls_disable = true
}}
listener "tcp" {{
  address          = "127.0.0.1:{second}"
  tls_disable      = true
  max_request_size = 2048
}}
storage "inmem" {{}}
telemetry {{
  statsd_address            = "127.0.0.1:{statsd_port}"
  prometheus_retention_time = "1h"
}}
"""
    server = coffer.with_config(text, port=first).start()
    try:
        other = ServerProcess([], port=second, logdir=tmp_path)  # the second port of `server`
        assert server.health() == 501  # uninitialised, on the first listener
        assert other.request("GET", "/v1/sys/health").status == 501
        # each listener keeps its own request size limit
        big = {"secret_shares": 1, "secret_threshold": 1, "pad": "x" * 4096}
        assert other.request("PUT", "/v1/sys/init", big).status == 413
        lines: list[str] = []
        while not any(line.startswith("coffer_http_requests_total.") for line in lines):
            packet, _ = receiver.recvfrom(65536)
            lines += packet.decode().split("\n")
        assert any(line.endswith("|c") for line in lines)
        assert any(line.startswith("coffer_core_unsealed:0|g") for line in lines)
    finally:
        receiver.close()
        server.stop()
