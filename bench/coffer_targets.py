"""Coffer as a benchmark target: one node (inmem or file) or a Raft cluster on loopback.

Every node is a real ``coffer server -config`` process (through ``bench.serve`` for
the uvloop / stdlib-json / profile switches), configured in HCL as an operator
would, with plain HTTP on 127.0.0.1. Cluster nodes each get their own loopback IP
for Raft (127.0.0.21, .22, ...), as in the cluster tests.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bench.haproxy import HAProxy
from bench.procs import Proc
from bench.revision import tree_at
from bench.targets import Endpoints, Target
from harness.ports import free_port
from harness.rest import call
from harness.wait import wait_until

__all__ = ["CofferCluster", "CofferSingle", "ServeFlags"]


#: Revisions whose server ran on asyncio's own loop (before uvloop became its loop).
ASYNCIO_REVISIONS = frozenset({"e04d5b8"})


@dataclass(frozen=True)
class ServeFlags:
    #: "" for the server's own loop, or "asyncio"/"uvloop" to force one.
    loop: str = ""
    stdlib_json: bool = False
    profile: str = ""
    #: A git revision whose server runs instead of the working tree's (before/after).
    revision: str = ""

    def argv(self) -> list[str]:
        out = [f"--{self.loop}"] if self.loop else []
        if self.stdlib_json:
            out.append("--stdlib-json")
        if self.profile:
            out += ["--profile", self.profile]
        return out

    @property
    def label(self) -> str:
        json_ = "stdlib json" if self.stdlib_json else "orjson"
        # The server ran asyncio.run until e04d5b8's successors put it on uvloop.
        loop = self.loop or ("asyncio" if self.revision in ASYNCIO_REVISIONS else "uvloop")
        code = f"code at {self.revision}" if self.revision else "this tree"
        return f"{code}, {json_}, {loop}"


@dataclass
class CofferNode:
    name: str
    base: Path
    storage: str
    api_port: int
    raft_ip: str = ""
    raft_port: int = 0
    join_to: str = ""
    flags: ServeFlags = field(default_factory=ServeFlags)
    proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def config_text(self) -> str:
        listener = (
            f'listener "tcp" {{\n  address = "127.0.0.1:{self.api_port}"\n  tls_disable = 1\n}}\n'
        )
        if self.storage == "inmem":
            storage = 'storage "inmem" {}\n'
        elif self.storage == "file":
            storage = f'storage "file" {{\n  path = "{self.base / self.name / "data"}"\n}}\n'
        else:
            join = (
                f'  retry_join {{\n    leader_api_addr = "{self.join_to}"\n  }}\n'
                if self.join_to
                else ""
            )
            storage = (
                f'storage "raft" {{\n  path = "{self.base / self.name / "raft"}"\n'
                f'  node_id = "{self.name}"\n{join}}}\n'
                f'api_addr = "{self.url}"\ncluster_addr = "{self.raft_ip}:{self.raft_port}"\n'
            )
        return f'{listener}{storage}log_level = "info"\n'

    def argv(self, config: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "bench.serve",
            *self.flags.argv(),
            "--",
            "server",
            f"-config={config}",
        ]

    def start(self) -> Proc:
        config = self.base / f"{self.name}.hcl"
        config.write_text(self.config_text())
        proc = Proc(self.name, self.argv(config), self.base / f"{self.name}.log")
        if self.flags.revision:
            proc.cwd = tree_at(self.flags.revision)
            proc.env["PYTHONPATH"] = str(proc.cwd)
        self.proc = proc.start()
        return self.proc

    def request(self, method: str, path: str, body: Any = None, token: str = "") -> Any:
        """The answer's status and JSON body (None when empty)."""
        reply = call(self.api_port, method, path, body, timeout=30, token=token or None)
        return reply.status, reply.doc

    def health(self) -> int:
        return int(self.request("GET", "/v1/sys/health")[0])

    def wait_listening(self, timeout: float = 60) -> None:
        def up() -> bool:
            assert self.proc is not None
            self.proc.check_alive()
            return self.health() > 0

        wait_until(up, timeout, f"{self.name} listening")

    def unseal(self, keys: list[str], timeout: float = 300) -> None:
        def done() -> bool:
            for key in keys:
                status, body = self.request("PUT", "/v1/sys/unseal", {"key": key})
                if status != 200:
                    raise ValueError(f"unseal {status}: {body}")
                if not body["sealed"]:
                    return True
            return False

        wait_until(done, timeout, f"{self.name} unsealed", every=0.2)


def _init(node: CofferNode) -> tuple[list[str], str]:
    status, body = node.request("PUT", "/v1/sys/init", {"secret_shares": 1, "secret_threshold": 1})
    if status != 200:
        raise RuntimeError(f"init {status}: {body}")
    return list(body["keys"]), str(body["root_token"])


def _joined(node: CofferNode) -> bool:
    """A joiner reports initialised once it holds the leader's challenge."""
    return bool(node.request("GET", "/v1/sys/seal-status")[1]["initialized"])


def _mount_kv2(node: CofferNode, token: str) -> None:
    status, body = node.request(
        "POST", "/v1/sys/mounts/secret", {"type": "kv", "options": {"version": "2"}}, token
    )
    if status not in (200, 204) and "already in use" not in str(body):
        raise RuntimeError(f"mount secret/: {status} {body}")


class CofferSingle(Target):
    """One node on ``inmem`` or ``file`` storage: init (1 share), unseal, KV v2 at secret/."""

    kind = "coffer"

    def __init__(self, storage: str, flags: ServeFlags | None = None, name: str = "") -> None:
        super().__init__(name or f"coffer-{storage}")
        self.flags = flags or ServeFlags()
        self.node = CofferNode("node1", self.workdir, storage, free_port(), flags=self.flags)
        self.keys: list[str] = []
        self.token = ""

    def start(self) -> None:
        began = time.monotonic()
        self.procs = [self.node.start()]
        self.node.wait_listening()
        if not self.keys:
            self.keys, self.token = _init(self.node)
        self.node.unseal(self.keys)
        self.info["start_to_unsealed_s"] = round(time.monotonic() - began, 3)
        _mount_kv2(self.node, self.token)

    def restart(self) -> float:
        """Stop and start again on the same data; seconds from spawn to unsealed."""
        self.stop()
        self.start()
        return float(self.info["start_to_unsealed_s"])

    def endpoints(self, view: str) -> Endpoints:
        return Endpoints(write=self.node.url, reads=[self.node.url], token=self.token)


class CofferCluster(Target):
    """``size`` nodes on Raft: node1 initialised, the others retry-join it and are unsealed.

    Views: ``active`` (every request to the active node), ``standbys`` (reads
    round-robin over the performance standbys, writes to the active node) and
    ``lb`` (everything through HAProxy with ``deploy/haproxy/haproxy.cfg``).
    """

    kind = "coffer"

    def __init__(self, size: int, flags: ServeFlags | None = None, lb: bool = False) -> None:
        super().__init__(f"coffer-raft{size}")
        self.flags = flags or ServeFlags()
        first = free_port()
        self.nodes: list[CofferNode] = []
        for index in range(1, size + 1):
            ip = f"127.0.0.{20 + index}"
            self.nodes.append(
                CofferNode(
                    f"node{index}",
                    self.workdir,
                    "raft",
                    first if index == 1 else free_port(),
                    raft_ip=ip,
                    raft_port=free_port(ip),
                    join_to=f"http://127.0.0.1:{first}" if index > 1 else "",
                    flags=self.flags,
                )
            )
        self.lb = HAProxy(self.workdir) if lb else None
        self.keys: list[str] = []
        self.token = ""

    def _wait_roles(self, timeout: float = 120) -> CofferNode:
        def check() -> CofferNode | None:
            codes = [n.health() for n in self.nodes]
            if sorted(codes) == [200] + [473] * (len(codes) - 1):
                return self.nodes[codes.index(200)]
            return None

        return wait_until(check, timeout, "one active node and performance standbys", every=0.2)

    def start(self) -> None:
        began = time.monotonic()
        self.procs = [node.start() for node in self.nodes]
        for node in self.nodes:
            node.wait_listening()
        first = self.nodes[0]
        fresh = not self.keys
        if fresh:
            self.keys, self.token = _init(first)
            first.unseal(self.keys)
            wait_until(lambda: first.health() == 200, 60, "node1 active")
            for node in self.nodes[1:]:
                wait_until(partial(_joined, node), 60, f"{node.name} joined")
                node.unseal(self.keys)
        else:
            for node in self.nodes:
                node.unseal(self.keys)
        self.info["start_to_unsealed_s"] = round(time.monotonic() - began, 3)
        active = self._wait_roles()
        self.info["start_to_ready_s"] = round(time.monotonic() - began, 3)
        self.active = active
        _mount_kv2(active, self.token)
        if self.lb is not None:
            self.procs.append(self.lb.start([n.api_port for n in self.nodes]))
            self.lb.wait_ready(self.token)

    def restart(self) -> float:
        """Stop every node and start them on the same data; seconds to active + standbys."""
        self.stop()
        self.start()
        return float(self.info["start_to_ready_s"])

    def endpoints(self, view: str) -> Endpoints:
        active = self.active.url
        if view == "active":
            return Endpoints(write=active, reads=[active], token=self.token)
        if view == "standbys":
            reads = [n.url for n in self.nodes if n is not self.active]
            return Endpoints(write=active, reads=reads, token=self.token)
        if view == "lb":
            assert self.lb is not None
            return Endpoints(write=self.lb.url, reads=[self.lb.url], token=self.token)
        raise ValueError(f"unknown view {view!r}")
