"""The client load of :mod:`chaos.workload`, spread over every node.

Each key has one writer thread. A writer sends each write to the next node that
the monitor last saw serving, so writes reach the active node directly and through
standbys (forwarding); a node that is down or sealed is skipped, a partitioned one
is not.

Readers alternate between *any-node* reads, sent to the next serving node (a
performance standby answers from its own replica), and *strong* reads, sent to a
node the monitor saw active. A read counts as strong only if the reply carries
``X-Coffer-Index``, which only a node that is active when it answers adds; a
"strong" read that a standby answered is recorded as an any-node read.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from chaos.checker import ANY, FINAL, STRONG, History
from chaos.process.monitor import Monitor
from chaos.workload import FAILURES, Answer, KVWorkload, LoadConfig, parse_doc
from harness.cluster import Cluster, ClusterError, Node

__all__ = ["Workload", "WorkloadConfig"]

INDEX_HEADER = "x-coffer-index"


#: The process runner's load needs nothing beyond the shared settings.
WorkloadConfig = LoadConfig


@dataclass
class _Counter:
    value: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> int:
        with self.lock:
            self.value += 1
            return self.value


class Workload(KVWorkload[Node]):
    """The shared load, one writer thread per key, each request to a node of its own."""

    def __init__(
        self,
        cluster: Cluster,
        monitor: Monitor,
        history: History,
        t0: float,
        config: WorkloadConfig,
    ) -> None:
        keys = [f"k{i}" for i in range(config.keys)]
        super().__init__(config, history, t0, keys, writers=len(keys))
        self.cluster = cluster
        self.monitor = monitor
        self._turn = _Counter()

    def _next_node(self) -> Node | None:
        nodes = self.monitor.serving_nodes() or [n for n in self.cluster.nodes if n.running]
        return nodes[self._turn.next() % len(nodes)] if nodes else None

    # -- how a request travels -------------------------------------------------------

    def send(
        self,
        target: Node,
        method: str,
        path: str,
        body: Any = None,
        consistency: str | None = None,
    ) -> Answer:
        reply = target.request(
            method, path, body, token=self.cluster.root_token, timeout=self.config.timeout
        )
        return Answer(
            reply.status,
            parse_doc(reply.body),
            target.name,
            reply.body,
            authoritative=INDEX_HEADER in reply.headers,
        )

    def session(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def write_target(self, session: Node | None) -> Node | None:
        return self._next_node()

    def read_target(
        self, session: Node | None, rng: random.Random, strong: bool
    ) -> tuple[Node | None, str]:
        active = self.monitor.active_nodes() if strong else []
        if active:
            return rng.choice(active), STRONG
        return self._next_node(), ANY

    def detail(self, answer: Answer) -> str:
        return answer.body[:200].decode(errors="replace")

    def target_name(self, target: Node) -> str:
        return target.name

    # -- after recovery --------------------------------------------------------------

    def final_reads(self, deadline: float = 30.0) -> None:
        """One read per key that the active node answered, recorded as FINAL."""
        until = time.monotonic() + deadline
        for key in self.keys:
            while True:
                op = None
                with contextlib.suppress(ClusterError):
                    op = self.read(self.cluster.active(timeout=10), key, FINAL)
                if (op is not None and op.ok and op.consistency == FINAL) or (
                    time.monotonic() > until
                ):
                    break
                time.sleep(0.3)

    def node_values(
        self, node: Node, expected: dict[str, int | None], deadline: float = 10.0
    ) -> dict[str, int | None]:
        """What ``node`` itself answers for every key, once it caught up (or not)."""
        return self.replica_values(node, expected, deadline)

    def serve_check(self, node: Node) -> str:
        """A write through ``node`` and a read of it back through ``node``; "" if both work."""
        path = f"/v1/{self.config.mount}/data/probe-{node.name}"
        marker = f"{node.name}-{time.monotonic_ns()}"
        try:
            put = self.send(node, "POST", path, {"data": {"probe": marker}})
            if put.status not in (200, 204):
                return f"write through {node.name}: {put.status} {put.body[:200]!r}"
            got = self.send(node, "GET", path)
            if got.status != 200 or got.doc["data"]["data"].get("probe") != marker:
                return f"read back through {node.name}: {got.status} {got.body[:200]!r}"
        except FAILURES as exc:
            return f"{node.name}: {type(exc).__name__}: {exc}"
        return ""
