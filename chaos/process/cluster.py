"""A cluster of real ``coffer server`` processes on loopback, for the chaos tool.

Each node serves its API on 127.0.0.1 and runs Raft on a loopback IP of its own
(Linux routes all of 127/8 to ``lo``, and the Raft transport binds its outgoing
connections to ``cluster_addr`` too), so an iptables rule on that IP cuts exactly
one node's Raft links while every API stays reachable. The Raft IPs sit in a
block picked per process (``127.77.<1 + pid % 250>.1x``), away from the 127.0.0.1x the
test suite uses, so a partition here never hits another run's cluster.

Self-contained on purpose (the tool does not import the test suite): bootstrap is
init node 1, unseal it, then each other node ``retry_join``s node 1 and is
unsealed with the same Shamir keys, as an operator would do it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["Cluster", "ClusterError", "Node", "Reply", "raft_block", "wait_until"]

T = TypeVar("T")

#: ``sys/health`` codes of a node that serves requests (active, performance standby, standby).
SERVING = (200, 473, 429)


#: Every node process this interpreter started, killed at exit if still running.
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


@atexit.register
def _kill_leftovers() -> None:
    for proc in list(_STARTED.values()):
        if proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)


class ClusterError(RuntimeError):
    """The cluster did not do what the tool needed (start, unseal, elect...)."""


def raft_block(pid: int | None = None) -> str:
    """The loopback /24 this process puts its nodes' Raft addresses in."""
    return f"127.77.{(os.getpid() if pid is None else pid) % 250 + 1}"


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


def wait_until(check: Callable[[], T | None], timeout: float, what: str, every: float = 0.1) -> T:
    """Poll ``check`` until it returns something truthy; errors count as "not yet"."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
        except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError) as exc:
            last = exc
        else:
            if result:
                return result
            last = result
        if time.monotonic() >= deadline:
            raise ClusterError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")
        time.sleep(every)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Node:
    index: int
    base: Path
    api_port: int
    raft_ip: str
    raft_port: int
    join_to: str | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"node{self.index}"

    @property
    def api_addr(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def data_dir(self) -> Path:
        return self.base / self.name / "raft"

    @property
    def log_path(self) -> Path:
        return self.base / f"{self.name}.log"

    def config_text(self) -> str:
        join = ""
        if self.join_to:
            join = f'  retry_join {{\n    leader_api_addr = "{self.join_to}"\n  }}\n'
        return (
            f'listener "tcp" {{\n  address = "127.0.0.1:{self.api_port}"\n  tls_disable = 1\n}}\n'
            f'storage "raft" {{\n  path = "{self.data_dir}"\n  node_id = "{self.name}"\n{join}}}\n'
            f'api_addr = "{self.api_addr}"\ncluster_addr = "{self.raft_ip}:{self.raft_port}"\n'
            'log_level = "info"\n'
        )

    # -- process control -------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30) -> None:
        if self.running:
            raise ClusterError(f"{self.name} is already running")
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
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
                cwd=self.base,
                start_new_session=True,  # Ctrl-C reaches the tool, which stops the nodes
            )
        _STARTED[self.proc.pid] = self.proc

        def up() -> bool:
            if not self.running:
                raise ClusterError(f"{self.name} exited:\n{self.log_tail()}")
            self.health(timeout=2)
            return True

        wait_until(up, timeout, f"{self.name} to listen")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM, then SIGKILL if it does not exit in time."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, chars: int = 3000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return text[-chars:]

    # -- HTTP ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        timeout: float = 10.0,
    ) -> Reply:
        """One request on a fresh connection; raises OSError (or HTTPException) on failure."""
        headers = {"X-Vault-Token": token} if token else {}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection("127.0.0.1", self.api_port, timeout=timeout)
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            data = response.read()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        finally:
            conn.close()

    def health(self, timeout: float = 2.0) -> int:
        return self.request("GET", "/v1/sys/health", timeout=timeout).status


class Cluster:
    """``size`` nodes in ``base``; every node but the first ``retry_join``s the first."""

    def __init__(self, base: Path, size: int, *, raft_net: str | None = None) -> None:
        if size < 1:
            raise ValueError("a cluster needs at least one node")
        self.base = base
        net = raft_net or raft_block()
        first_api = free_port()
        self.nodes: list[Node] = []
        for index in range(1, size + 1):
            ip = f"{net}.{10 + index}"
            self.nodes.append(
                Node(
                    index=index,
                    base=base,
                    api_port=first_api if index == 1 else free_port(),
                    raft_ip=ip,
                    raft_port=free_port(ip),
                    join_to=None if index == 1 else f"http://127.0.0.1:{first_api}",
                )
            )
        self.keys: list[str] = []
        self.threshold = 0
        self.root_token = ""

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def close(self) -> None:
        """Stop every node (SIGTERM, SIGKILL after a grace period)."""
        for node in self.nodes:
            if node.running and node.proc is not None:
                node.proc.send_signal(signal.SIGTERM)
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop(timeout=10)

    # -- bootstrap -------------------------------------------------------------------

    def bootstrap(self, shares: int = 3, threshold: int = 2, timeout: float = 60) -> None:
        """Start every node, init node 1 and unseal it, then unseal every joiner."""
        self.base.mkdir(parents=True, exist_ok=True)
        for node in self.nodes:
            node.start()
        first = self.nodes[0]
        reply = first.request(
            "PUT", "/v1/sys/init", {"secret_shares": shares, "secret_threshold": threshold}
        )
        if reply.status != 200:
            raise ClusterError(f"init failed: {reply.status} {reply.body[:300]!r}")
        self.keys = reply.json["keys"]
        self.threshold = threshold
        self.root_token = reply.json["root_token"]
        self.unseal(first, timeout)
        wait_until(lambda: first.health() == 200, timeout, f"{first.name} to become active")
        for node in self.nodes[1:]:
            wait_until(
                functools.partial(self.initialized, node),
                timeout,
                f"{node.name} to hold a join challenge (retry_join)",
            )
            self.unseal(node, timeout)
        self.wait_whole(timeout)

    def unseal(self, node: Node, timeout: float = 60) -> None:
        """Submit the Shamir keys until the node reports unsealed."""

        def submit() -> bool:
            for key in self.keys[: self.threshold]:
                reply = node.request("PUT", "/v1/sys/unseal", {"key": key}, timeout=30)
                if reply.status != 200:
                    raise ValueError(f"unseal answered {reply.status} {reply.body[:200]!r}")
                if not reply.json["sealed"]:
                    return True
            return False

        wait_until(submit, timeout, f"{node.name} to unseal", every=0.3)

    def initialized(self, node: Node) -> bool:
        """A joiner reports initialised once it holds the leader's join challenge."""
        return bool(node.request("GET", "/v1/sys/seal-status", timeout=5).json["initialized"])

    def sealed(self, node: Node) -> bool:
        status = node.request("GET", "/v1/sys/seal-status", timeout=5).json
        return bool(status["initialized"] and status["sealed"])

    # -- state -----------------------------------------------------------------------

    def health(self) -> dict[str, int]:
        """Every node's ``sys/health`` code (0: no answer)."""
        codes: dict[str, int] = {}
        for node in self.nodes:
            try:
                codes[node.name] = node.health(timeout=2) if node.running else 0
            except (OSError, http.client.HTTPException):
                codes[node.name] = 0
        return codes

    def active(self, among: list[Node] | None = None, timeout: float = 30) -> Node:
        """The one node (of ``among``) that reports itself active."""
        candidates = among or self.nodes

        def find() -> Node | None:
            found = [n for n in candidates if n.running and n.health() == 200]
            return found[0] if len(found) == 1 else None

        return wait_until(find, timeout, "exactly one active node")

    def raft_members(self) -> list[str]:
        """Node ids in ``sys/storage/raft/configuration`` (asked of the active node)."""
        reply = self.active().request(
            "GET", "/v1/sys/storage/raft/configuration", token=self.root_token
        )
        if reply.status != 200:
            raise ClusterError(f"raft configuration: {reply.status} {reply.body[:200]!r}")
        return sorted(s["node_id"] for s in reply.json["data"]["config"]["servers"])

    def applied_index(self, node: Node) -> int:
        return int(node.request("GET", "/v1/sys/leader", timeout=5).json["raft_applied_index"])

    def wait_whole(self, timeout: float = 60) -> None:
        """Every node unsealed, one active and the others standbys, all Raft members."""

        def whole() -> bool:
            codes = sorted(self.health().values())
            if codes.count(200) != 1 or any(c not in SERVING for c in codes):
                return False
            return self.raft_members() == sorted(n.name for n in self.nodes)

        wait_until(whole, timeout, "every node back (one active, the rest standbys, all members)")

    def wait_caught_up(self, node: Node, timeout: float = 30) -> float:
        """Wait until ``node`` has applied what the active node had applied when asked."""
        started = time.monotonic()
        target = self.applied_index(self.active())
        wait_until(lambda: self.applied_index(node) >= target, timeout, f"{node.name} to catch up")
        return time.monotonic() - started
