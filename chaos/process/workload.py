"""The client load: KV v2 writes and reads spread over every node, each op recorded.

Each key has one writer thread, which writes 1, 2, 3, ... and never reuses a value
(a failed write's value is skipped), as :mod:`chaos.checker` expects. A writer
sends each write to the next node that the monitor last saw serving, so writes
reach the active node directly and through standbys (forwarding); a node that is
down or sealed is skipped, a partitioned one is not. Every op carries the KV v2
version the server gave the write (or the read saw), which the checker orders by.

Readers alternate between *any-node* reads, sent to the next serving node (a
performance standby answers from its own replica), and *strong* reads, sent to a
node the monitor saw active. A read counts as strong only if the reply carries
``X-Coffer-Index``, which only a node that is active when it answers adds; a
"strong" read that a standby answered is recorded as an any-node read.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from chaos.checker import ANY, FINAL, STRONG, History, Op
from chaos.process.cluster import Cluster, ClusterError, Node, Reply
from chaos.process.monitor import Monitor

__all__ = ["Workload", "WorkloadConfig"]

INDEX_HEADER = "x-coffer-index"
#: What a request to a node that is down, sealed or answering nonsense may raise.
_FAILURES = (OSError, http.client.HTTPException, KeyError, TypeError, ValueError)


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    mount: str = "chaos"
    keys: int = 4
    readers: int = 2
    #: Pause between one thread's operations (keeps CPU for the servers).
    pause: float = 0.02
    timeout: float = 10.0
    seed: int = 1


@dataclass
class _Counter:
    value: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> int:
        with self.lock:
            self.value += 1
            return self.value


def _value_of(doc: Any) -> int:
    value = doc["data"]["data"]["v"]
    if not isinstance(value, int):
        raise ValueError(f"not an integer: {value!r}")
    return value


def _version(reply: Reply, *path: str) -> int | None:
    """KV v2's version number at ``path`` in a reply (None if absent)."""
    try:
        doc: Any = reply.json
    except ValueError:
        return None
    for part in path:
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc if isinstance(doc, int) else None


class Workload:
    def __init__(
        self,
        cluster: Cluster,
        monitor: Monitor,
        history: History,
        t0: float,
        config: WorkloadConfig,
    ) -> None:
        self.cluster = cluster
        self.monitor = monitor
        self.history = history
        self.t0 = t0
        self.config = config
        self.keys = [f"k{i}" for i in range(config.keys)]
        self._turn = _Counter()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def now(self) -> float:
        return time.monotonic() - self.t0

    def _path(self, key: str) -> str:
        return f"/v1/{self.config.mount}/data/{key}"

    def _next_node(self) -> Node | None:
        nodes = self.monitor.serving_nodes() or [n for n in self.cluster.nodes if n.running]
        return nodes[self._turn.next() % len(nodes)] if nodes else None

    def _send(self, node: Node, method: str, path: str, body: Any = None) -> Reply:
        return node.request(
            method, path, body, token=self.cluster.root_token, timeout=self.config.timeout
        )

    # -- operations ------------------------------------------------------------------

    def write(self, node: Node, key: str, value: int) -> bool:
        start = self.now()
        try:
            reply = self._send(node, "POST", self._path(key), {"data": {"v": value}})
        except (OSError, http.client.HTTPException) as exc:
            self.history.record(
                kind="write", key=key, value=value, start=start, end=self.now(), ok=False,
                node=node.name, error=f"{type(exc).__name__}: {exc}"[:200],
            )  # fmt: skip
            return False
        ok = reply.status in (200, 204)
        error = "" if ok else reply.body[:200].decode(errors="replace")
        self.history.record(
            kind="write", key=key, value=value, start=start, end=self.now(), ok=ok,
            node=node.name, status=reply.status, error=error,
            version=_version(reply, "data", "version") if ok else None,
        )  # fmt: skip
        return ok

    def read(self, node: Node, key: str, consistency: str) -> Op:
        """Record one read and return it. ``consistency`` is what the read was sent as."""
        start = self.now()
        value: int | None = None
        version: int | None = None
        ok, error, status = False, "", 0
        try:
            reply = self._send(node, "GET", self._path(key))
            status = reply.status
            if consistency != ANY and INDEX_HEADER not in reply.headers:
                consistency = ANY  # a standby answered: it may have been stale
            if reply.status == 200:
                value, ok = _value_of(reply.json), True
                version = _version(reply, "data", "metadata", "version")
            elif reply.status == 404 and not (reply.json or {}).get("errors"):
                ok = True  # KV v2: no such key (yet)
            else:
                error = reply.body[:200].decode(errors="replace")
        except _FAILURES as exc:
            error = f"{type(exc).__name__}: {exc}"[:200]
        return self.history.record(
            kind="read", key=key, value=value, start=start, end=self.now(), ok=ok,
            consistency=consistency, node=node.name, status=status, error=error,
            version=version,
        )  # fmt: skip

    # -- threads ---------------------------------------------------------------------

    def _writer(self, key: str) -> None:
        for value in itertools.count(1):
            if self._stop.is_set():
                return
            node = self._next_node()
            if node is None or not self.write(node, key, value):
                self._stop.wait(0.1)  # back off while nothing accepts writes
            self._stop.wait(self.config.pause)

    def _reader(self, seed: int) -> None:
        rng = random.Random(seed)
        while not self._stop.is_set():
            strong = rng.random() < 0.5
            active = self.monitor.active_nodes() if strong else []
            node = rng.choice(active) if active else self._next_node()
            if node is not None:
                self.read(node, rng.choice(self.keys), STRONG if active else ANY)
            self._stop.wait(self.config.pause)

    def start(self) -> None:
        for key in self.keys:
            self._threads.append(threading.Thread(target=self._writer, args=(key,)))
        for n in range(self.config.readers):
            seed = self.config.seed * 1000 + n
            self._threads.append(threading.Thread(target=self._reader, args=(seed,)))
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.config.timeout + 5)

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
        values: dict[str, int | None] = {}
        until = time.monotonic() + deadline
        for key in self.keys:
            while True:
                value: int | None = None
                with contextlib.suppress(*_FAILURES):
                    reply = self._send(node, "GET", self._path(key))
                    value = _value_of(reply.json) if reply.status == 200 else None
                values[key] = value
                if value == expected.get(key) or time.monotonic() > until:
                    break
                time.sleep(0.2)
        return values

    def serve_check(self, node: Node) -> str:
        """A write through ``node`` and a read of it back through ``node``; "" if both work."""
        path = f"/v1/{self.config.mount}/data/probe-{node.name}"
        marker = f"{node.name}-{time.monotonic_ns()}"
        try:
            put = self._send(node, "POST", path, {"data": {"probe": marker}})
            if put.status not in (200, 204):
                return f"write through {node.name}: {put.status} {put.body[:200]!r}"
            got = self._send(node, "GET", path)
            if got.status != 200 or got.json["data"]["data"].get("probe") != marker:
                return f"read back through {node.name}: {got.status} {got.body[:200]!r}"
        except _FAILURES as exc:
            return f"{node.name}: {type(exc).__name__}: {exc}"
        return ""
