"""A cluster of real ``coffer server`` processes on loopback, for the HA tests.

Each node has its own API port on 127.0.0.1, its own Raft address on its own
loopback IP (127.0.0.11, .12, ... — Linux routes all of 127/8 to ``lo``, and
consensus binds outgoing Raft connections to that IP too), so a firewall rule
on one IP isolates exactly that node's Raft traffic while its API stays
reachable. Config is HCL, as an operator writes it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def coffer_command() -> list[str]:
    script = Path(sys.executable).with_name("coffer")
    if script.exists():
        return [str(script)]
    found = shutil.which("coffer")
    return [found] if found else [sys.executable, "-m", "api.entrypoint"]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"Reply({self.status}, {self.body[:300]!r})"


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, http.client.HTTPException, AssertionError, ValueError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@dataclass
class Node:
    index: int
    base: Path
    api_port: int
    raft_ip: str
    raft_port: int
    join_to: str | None = None
    extra_raft: str = ""
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"node{self.index}"

    @property
    def api_addr(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def cluster_addr(self) -> str:
        return f"{self.raft_ip}:{self.raft_port}"

    @property
    def data_dir(self) -> Path:
        return self.base / self.name / "raft"

    @property
    def log_path(self) -> Path:
        return self.base / f"{self.name}.log"

    def config_text(self) -> str:
        join = (
            f'  retry_join {{\n    leader_api_addr = "{self.join_to}"\n  }}\n'
            if self.join_to
            else ""
        )
        return (
            f'listener "tcp" {{\n  address = "127.0.0.1:{self.api_port}"\n  tls_disable = 1\n}}\n'
            f'storage "raft" {{\n  path = "{self.data_dir}"\n  node_id = "{self.name}"\n'
            f"{join}{self.extra_raft}}}\n"
            f'api_addr = "{self.api_addr}"\ncluster_addr = "{self.cluster_addr}"\n'
            'log_level = "info"\n'
        )

    # -- process control -----------------------------------------------------------

    def start(self) -> Node:
        assert not self.running
        config = self.base / f"{self.name}.hcl"
        config.write_text(self.config_text())
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COFFER_", "PYTHON"))}
        env["PYTHONUNBUFFERED"] = "1"
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [*coffer_command(), "server", "-config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=ROOT,
                start_new_session=True,
            )

        def up() -> Reply:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log_text()[-3000:]}")
            return self.request("GET", "/v1/sys/health", timeout=2)

        wait_until(up, 30, f"{self.name} up")
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # -- HTTP -------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        timeout: float = 15.0,
        source: str | None = None,
    ) -> Reply:
        sent = dict(headers or {})
        payload = raw
        if body is not None:
            payload = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        if token:
            sent["X-Service-Token"] = token
        conn = http.client.HTTPConnection(
            "127.0.0.1",
            self.api_port,
            timeout=timeout,
            source_address=(source, 0) if source else None,
        )
        try:
            conn.request(method, path, body=payload, headers=sent)
            response = conn.getresponse()
            data = response.read()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        finally:
            conn.close()

    def health(self, query: str = "") -> int:
        return self.request("GET", f"/v1/sys/health{query}", timeout=5).status


class Cluster:
    """``size`` nodes; every node but the first retry-joins the first (optional)."""

    def __init__(self, base: Path, size: int, *, retry_join: bool = True, extra_raft: str = ""):
        self.base = base
        self.nodes: list[Node] = []
        first_api = free_port()
        for index in range(1, size + 1):
            ip = f"127.0.0.{10 + index}"
            node = Node(
                index=index,
                base=base,
                api_port=first_api if index == 1 else free_port(),
                raft_ip=ip,
                raft_port=free_port(ip),
                extra_raft=extra_raft,
            )
            if retry_join and index > 1:
                node.join_to = f"http://127.0.0.1:{first_api}"
            self.nodes.append(node)
        self.keys: list[str] = []
        self.root_token = ""

    def close(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()

    # -- bootstrap --------------------------------------------------------------------

    def init(self, node: Node, shares: int = 3, threshold: int = 2) -> None:
        reply = node.request(
            "PUT", "/v1/sys/init", {"secret_shares": shares, "secret_threshold": threshold}
        )
        assert reply.status == 200, reply
        self.keys = reply.json["keys"]
        self.root_token = reply.json["root_token"]

    def unseal(self, node: Node, timeout: float = 60) -> None:
        def submit() -> bool:
            for key in self.keys[:2]:
                reply = node.request("PUT", "/v1/sys/unseal", {"key": key}, timeout=60)
                assert reply.status == 200, reply
                if not reply.json["sealed"]:
                    return True
            return False

        wait_until(submit, timeout, f"{node.name} unsealed", every=0.3)

    def wait_initialized(self, node: Node, timeout: float = 30) -> None:
        """A joiner reports initialised once it holds the leader's challenge."""
        wait_until(
            lambda: node.request("GET", "/v1/sys/seal-status").json["initialized"],
            timeout,
            f"{node.name} to hold a join challenge",
        )

    def bootstrap(self) -> None:
        """Start every node, init node 1, unseal it, then every joiner in turn."""
        for node in self.nodes:
            node.start()
        first = self.nodes[0]
        self.init(first)
        self.unseal(first)
        self.wait_active(first)
        for node in self.nodes[1:]:
            self.wait_initialized(node)
            self.unseal(node)
        self.wait_roles()

    # -- roles --------------------------------------------------------------------------

    def wait_active(self, node: Node, timeout: float = 20) -> None:
        wait_until(lambda: node.health() == 200, timeout, f"{node.name} active")

    def active(self, among: list[Node] | None = None, timeout: float = 20) -> Node:
        candidates = among or [n for n in self.nodes if n.running]

        def find() -> Node | None:
            found = [n for n in candidates if n.running and n.health() == 200]
            return found[0] if len(found) == 1 else None

        found: Node = wait_until(find, timeout, "exactly one active node")
        return found

    def wait_roles(self, timeout: float = 30, standby_code: int = 473) -> None:
        """One active node; every other running node a (performance) standby."""

        def check() -> bool:
            codes = sorted(n.health() for n in self.nodes if n.running)
            running = len(codes)
            return codes == [200] + [standby_code] * (running - 1)

        wait_until(check, timeout, "one active node and standbys")

    def standbys(self) -> list[Node]:
        active = self.active()
        return [n for n in self.nodes if n.running and n is not active]
