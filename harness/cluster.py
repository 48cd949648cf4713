"""A cluster of real ``coffer server`` processes on loopback: the chaos tool's and the tests'.

Each node serves its API on 127.0.0.1 and runs Raft on a loopback IP of its own
(Linux routes all of 127/8 to ``lo``, and the Raft transport binds its outgoing
connections to ``cluster_addr`` too), so an iptables rule on that IP cuts exactly
one node's Raft links while every API stays reachable. By default the Raft IPs sit
in a block picked per process (``127.77.<1 + pid % 250>.1x``), away from the
127.0.0.1x the HA tests pass as ``raft_net``, so a partition made by one run never
hits another run's cluster.

Bootstrap is what an operator does: init node 1, unseal it, then each other node
``retry_join``s node 1 and is unsealed with the same Shamir keys. The HA tests
(``tests/cluster/servers.py``) subclass it to keep their own addresses, timeouts and
failure type.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from harness import wait
from harness.ports import free_port
from harness.process import spawn_server
from harness.rest import NO_ANSWER, Reply, call

__all__ = ["SERVING", "Cluster", "ClusterError", "Node", "Reply", "raft_block", "wait_until"]

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
    """The cluster did not do what its user needed (start, unseal, elect...)."""


def raft_block(pid: int | None = None) -> str:
    """The loopback /24 this process puts its nodes' Raft addresses in."""
    return f"127.77.{(os.getpid() if pid is None else pid) % 250 + 1}"


def wait_until(check: Callable[[], T | None], timeout: float, what: str, every: float = 0.1) -> T:
    """Poll ``check`` until it returns something truthy; errors count as "not yet"."""
    return wait.wait_until(check, timeout, what, every, error=ClusterError)


@dataclass
class Node:
    """One ``coffer server`` on Raft storage; subclasses may change the class defaults."""

    #: The header a ``token=`` goes in (Coffer takes both ``X-Vault-Token`` and its own).
    TOKEN_HEADER: ClassVar[str] = "X-Vault-Token"
    REQUEST_TIMEOUT: ClassVar[float] = 10.0
    HEALTH_TIMEOUT: ClassVar[float] = 2.0
    #: Where the process runs (None: the cluster's base directory).
    CWD: ClassVar[Path | None] = None

    index: int
    base: Path
    api_port: int
    raft_ip: str
    raft_port: int
    join_to: str | None = None
    #: More lines for the ``storage "raft"`` block (e.g. timing options).
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
        join = ""
        if self.join_to:
            join = f'  retry_join {{\n    leader_api_addr = "{self.join_to}"\n  }}\n'
        return (
            f'listener "tcp" {{\n  address = "127.0.0.1:{self.api_port}"\n  tls_disable = 1\n}}\n'
            f'storage "raft" {{\n  path = "{self.data_dir}"\n  node_id = "{self.name}"\n'
            f"{join}{self.extra_raft}}}\n"
            f'api_addr = "{self.api_addr}"\ncluster_addr = "{self.cluster_addr}"\n'
            'log_level = "info"\n'
        )

    # -- process control -------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30) -> Self:
        if self.running:
            raise ClusterError(f"{self.name} is already running")
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        config = self.base / f"{self.name}.hcl"
        config.write_text(self.config_text())
        with self.log_path.open("ab") as log:
            self.proc = spawn_server(["-config", str(config)], log, log, cwd=self.CWD or self.base)
        _STARTED[self.proc.pid] = self.proc

        def up() -> bool:
            if not self.running:
                raise ClusterError(f"{self.name} exited:\n{self.log_tail()}")
            self.health(timeout=2)
            return True

        wait_until(up, timeout, f"{self.name} to listen")
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)

    def freeze(self) -> None:
        """SIGSTOP: a hung process whose sockets stay open (peers see silence, not a reset)."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT after :meth:`freeze`."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM, then SIGKILL if it does not exit in time."""
        if self.proc is not None and self.running:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.send_signal(signal.SIGCONT)  # a frozen node must run to exit
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_text()[-chars:]

    # -- HTTP ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        timeout: float | None = None,
        source: str | None = None,
    ) -> Reply:
        """One request on a fresh connection; raises OSError (or HTTPException) on failure."""
        return call(
            self.api_port,
            method,
            path,
            body,
            token=token or None,
            token_header=self.TOKEN_HEADER,
            headers=headers,
            raw=raw,
            timeout=self.REQUEST_TIMEOUT if timeout is None else timeout,
            source=source,
        )

    def health(self, query: str = "", *, timeout: float | None = None) -> int:
        wait = self.HEALTH_TIMEOUT if timeout is None else timeout
        return self.request("GET", f"/v1/sys/health{query}", timeout=wait).status


class Cluster:
    """``size`` nodes in ``base``; every node but the first ``retry_join``s the first.

    Raft addresses are ``<raft_net>.11``, ``.12``...; ``raft_net`` defaults to this
    process's :func:`raft_block`. ``node_type`` lets a caller use its own ``Node``.
    """

    node_type: ClassVar[type[Node]] = Node

    def __init__(
        self,
        base: Path,
        size: int,
        *,
        raft_net: str | None = None,
        retry_join: bool = True,
        extra_raft: str = "",
    ) -> None:
        if size < 1:
            raise ValueError("a cluster needs at least one node")
        self.base = base
        net = raft_net or raft_block()
        first_api = free_port()
        self.nodes: list[Node] = []
        for index in range(1, size + 1):
            ip = f"{net}.{10 + index}"
            self.nodes.append(
                self.node_type(
                    index=index,
                    base=base,
                    api_port=first_api if index == 1 else free_port(),
                    raft_ip=ip,
                    raft_port=free_port(ip),
                    join_to=f"http://127.0.0.1:{first_api}" if retry_join and index > 1 else None,
                    extra_raft=extra_raft,
                )
            )
        self.keys: list[str] = []
        self.threshold = 0
        self.root_token = ""

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def close(self) -> None:
        """Stop every node (SIGTERM to all at once, SIGKILL after a grace period)."""
        for node in self.nodes:
            if node.running and node.proc is not None:
                node.proc.send_signal(signal.SIGTERM)
                node.proc.send_signal(signal.SIGCONT)
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
        self.init(first, shares, threshold)
        self.unseal(first, timeout)
        self.wait_active(first, timeout)
        for node in self.nodes[1:]:
            self.wait_initialized(node, timeout)
            self.unseal(node, timeout)
        self.wait_settled(timeout)

    def init(self, node: Node, shares: int = 3, threshold: int = 2) -> None:
        """``sys/init`` on ``node``; keeps the Shamir keys and the root token."""
        reply = node.request(
            "PUT", "/v1/sys/init", {"secret_shares": shares, "secret_threshold": threshold}
        )
        if reply.status != 200:
            raise ClusterError(f"init failed: {reply.status} {reply.body[:300]!r}")
        self.keys = reply.json["keys"]
        self.threshold = threshold
        self.root_token = reply.json["root_token"]

    def unseal(self, node: Node, timeout: float = 60, *, request_timeout: float = 30) -> None:
        """Submit the Shamir keys until the node reports unsealed."""

        def submit() -> bool:
            for key in self.keys[: self.threshold]:
                reply = node.request("PUT", "/v1/sys/unseal", {"key": key}, timeout=request_timeout)
                if reply.status != 200:
                    raise ValueError(f"unseal answered {reply.status} {reply.body[:200]!r}")
                if not reply.json["sealed"]:
                    return True
            return False

        wait_until(submit, timeout, f"{node.name} to unseal", every=0.3)

    def wait_active(self, node: Node, timeout: float = 60) -> None:
        wait_until(lambda: node.health() == 200, timeout, f"{node.name} to become active")

    def wait_initialized(self, node: Node, timeout: float = 60) -> None:
        wait_until(
            functools.partial(self.initialized, node),
            timeout,
            f"{node.name} to hold a join challenge (retry_join)",
        )

    def wait_settled(self, timeout: float = 60) -> None:
        """What :meth:`bootstrap` waits for last: here, :meth:`wait_whole`."""
        self.wait_whole(timeout)

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
            except NO_ANSWER:
                codes[node.name] = 0
        return codes

    def active(self, among: Sequence[Node] | None = None, timeout: float = 30) -> Node:
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
