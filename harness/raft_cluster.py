"""A cluster of bare Raft nodes (:mod:`harness.raft_node` subprocesses) on loopback.

For the Raft tests and ``tests/cluster/bench_raft.py``: no HTTP, no Coffer core,
only the consensus layer. Each node is a real process with its own data
directory, so ``kill -9`` and restarts exercise the journal and dump files exactly
as a crash would.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.ports import free_port
from harness.process import assert_logs_free_of, child_env
from harness.wait import wait_until

__all__ = ["TIMERS", "Cluster", "NodeError", "NodeProcess", "running"]

ROOT = Path(__file__).resolve().parents[1]

#: Loopback timers: heartbeats every 50 ms, elections after 250-600 ms.
TIMERS = {
    "heartbeat_interval": 0.05,
    "election_timeout_min": 0.25,
    "election_timeout_max": 0.6,
    "connection_timeout": 2.0,
    "reconnect_interval": 0.3,
    "leader_step_down_timeout": 1.5,
}


class NodeError(RuntimeError):
    pass


class NodeProcess:
    def __init__(self, name: str, config: dict[str, Any], log_path: Path) -> None:
        self.name = name
        self.config = config
        self.log_path = log_path
        self.address: str = config["cluster_addr"]
        self.proc: subprocess.Popen[str] | None = None
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

    def spawn(self) -> None:
        """Start the process without waiting (:meth:`wait_ready` waits)."""
        env = child_env(strip=("PYTHON",))
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.raft_node", json.dumps(self.config)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=ROOT,
                env=env,
            )
        self._replies = {0: queue.Queue()}
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def wait_ready(self) -> None:
        ready = self._replies[0].get(timeout=30)
        if ready.get("result") != "ready":
            raise NodeError(f"{self.name} failed to start: {ready}")

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            message = json.loads(line)
            with self._lock:
                box = self._replies.get(message["id"])
            if box is not None:
                box.put(message)

    def request(self, op: str, *, wait: float = 20.0, **args: Any) -> Any:
        assert self.proc is not None and self.proc.stdin is not None
        request_id = next(self._ids)
        box: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._replies[request_id] = box
        self.proc.stdin.write(json.dumps({"id": request_id, "op": op, **args}) + "\n")
        self.proc.stdin.flush()
        try:
            reply = box.get(timeout=wait)
        except queue.Empty:
            raise NodeError(f"{self.name}: {op} timed out") from None
        finally:
            with self._lock:
                self._replies.pop(request_id, None)
        if not reply["ok"]:
            raise NodeError(f"{self.name}: {op} failed: {reply['error']}")
        return reply["result"]

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, exactly like a crash."""
        if self.proc is not None:
            self.proc.kill()
            self._reap()

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.alive:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(json.dumps({"id": -1, "op": "exit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        self._reap()

    def _reap(self) -> None:
        assert self.proc is not None
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.proc = None

    def log_text(self) -> str:
        return self.log_path.read_text()


class Cluster:
    def __init__(
        self, root: Path, size: int = 3, *, hosts: list[str] | None = None, **overrides: Any
    ) -> None:
        """``hosts``: one loopback address per node (so a firewall rule can cut one off)."""
        secret = base64.b64encode(os.urandom(32)).decode()
        hosts = hosts or ["127.0.0.1"] * size
        addresses = {f"node-{n}": f"{hosts[n - 1]}:{free_port()}" for n in range(1, size + 1)}
        self.nodes: list[NodeProcess] = []
        for node_id, address in addresses.items():
            config = {
                "node_id": node_id,
                "cluster_addr": address,
                "data_dir": str(root / node_id),
                "cluster_secret": secret,
                "peers": {other: addr for other, addr in addresses.items() if other != node_id},
                **TIMERS,
                **overrides,
            }
            self.nodes.append(NodeProcess(node_id, config, root / f"{node_id}.log"))

    def start(self) -> None:
        """Every node at once, as a real cluster boots (one by one waited ~0.5 s a node)."""
        for node in self.nodes:
            node.spawn()
        for node in self.nodes:
            node.wait_ready()

    def close(self) -> None:
        for node in self.nodes:
            node.stop()

    def live(self) -> list[NodeProcess]:
        return [node for node in self.nodes if node.alive]

    def wait_for_leader(self, timeout: float = 15.0) -> NodeProcess:
        """The node that the live nodes agree leads (polls status)."""

        def agreed() -> NodeProcess | None:
            live = self.live()
            statuses = [node.request("status") for node in live]
            leaders = {status["leader"] for status in statuses}
            if len(leaders) == 1 and None not in leaders:
                (address,) = leaders
                for node, status in zip(live, statuses, strict=True):
                    if node.address == address and status["state"] == "leader":
                        return node
            return None

        return wait_until(agreed, timeout, "an agreed leader", 0.02, retry_on=(), error=NodeError)

    def followers(self, leader: NodeProcess) -> list[NodeProcess]:
        return [node for node in self.live() if node is not leader]

    def wait_converged(self, timeout: float = 20.0) -> int:
        """Wait until every live node applied what the leader committed."""
        leader = self.wait_for_leader(timeout)
        # Right after an election the leader's commit index can trail its log
        # until it commits an entry of its own term: commit one, wait for that.
        revision = leader.request("put", key="converged-marker", value="1", wait=timeout)
        target = max(int(revision), leader.request("status")["commit_index"])
        for node in self.live():
            node.request("wait_index", index=target, timeout=timeout, wait=timeout + 5)
        return int(target)


@contextlib.contextmanager
def running(
    root: Path,
    *,
    hosts: list[str] | None = None,
    forbidden: Sequence[str] = ("truncating already-applied", "CRITICAL"),
    **overrides: Any,
) -> Iterator[Cluster]:
    """A started :class:`Cluster`, closed afterwards; then no node's log may hold any of
    ``forbidden`` (checked only when the block using it did not fail)."""
    nodes = Cluster(root, hosts=hosts, **overrides)
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.close()
    assert_logs_free_of(nodes.nodes, forbidden)
