"""The compose load balancer on loopback: Debian's HAProxy with ``deploy/haproxy/haproxy.cfg``.

The compose file's configuration is used as it is, with only what ties it to
Docker replaced: the ``resolvers docker`` section and the per-server DNS options
go, the ``nodeN:8200`` servers become this run's loopback ports, the listeners
bind 127.0.0.1 on free ports, and the admin socket moves into the work dir.
Routing (reads to active + performance standbys, writes to the active node),
health checks, ``http-server-close``, retries and the per-request log stay.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from bench.procs import ROOT, Proc
from harness.ports import free_port
from harness.rest import call
from harness.wait import wait_until

__all__ = ["COMPOSE_CFG", "HAProxy", "render_config"]

COMPOSE_CFG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"


def _must_sub(pattern: str, replacement: str, text: str, flags: int = 0) -> str:
    out, count = re.subn(pattern, replacement, text, flags=flags)
    if not count:
        raise RuntimeError(f"{COMPOSE_CFG}: no match for {pattern!r}; update bench/haproxy.py")
    return out


def render_config(source: str, ports: list[int], lb_port: int, stats_port: int, sock: Path) -> str:
    text = re.sub(r"\nresolvers docker\n(?:[ \t]+.*\n)+", "\n", source)
    text = _must_sub(r" init-addr \S+ resolvers docker resolve-prefer ipv4", "", text)
    text = _must_sub(r"stats socket \S+", f"stats socket {sock}", text)
    text = _must_sub(r"bind :8200", f"bind 127.0.0.1:{lb_port}", text)
    text = _must_sub(r"bind :8404", f"bind 127.0.0.1:{stats_port}", text)
    for index, port in enumerate(ports, start=1):
        text = _must_sub(
            rf"server node{index} node{index}:8200", f"server node{index} 127.0.0.1:{port}", text
        )
    # Servers beyond the compose file's three are not routed to.
    if "resolvers" in text:
        raise RuntimeError(f"{COMPOSE_CFG}: a resolvers reference is left; update bench/haproxy.py")
    return text


class HAProxy:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = 0
        self.proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, node_ports: list[int]) -> Proc:
        binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.port = self.port or free_port()
        cfg = self.workdir / "haproxy.cfg"
        cfg.write_text(
            render_config(
                COMPOSE_CFG.read_text(),
                node_ports,
                self.port,
                free_port(),
                self.workdir / "haproxy.sock",
            )
        )
        self.proc = Proc("haproxy", [binary, "-db", "-f", str(cfg)], self.workdir / "haproxy.log")
        return self.proc.start()

    def wait_ready(self, token: str) -> None:
        """Until both backends route: a write and a read through the balancer succeed."""

        def ok() -> bool:
            assert self.proc is not None
            self.proc.check_alive()
            status = call(self.port, "GET", "/v1/sys/health?perfstandbyok=true", timeout=30).status
            put = call(
                self.port,
                "PUT",
                "/v1/secret/data/lb-probe",
                {"data": {"v": 1}},
                timeout=30,
                token=token,
            ).status
            return status == 200 and put == 200

        wait_until(ok, 60, "haproxy routing", every=0.5)
        # Servers start up; the standbys leave the write backend after two failed
        # checks (inter 1 s). Wait for that rather than measure the transition.
        time.sleep(3.0)
