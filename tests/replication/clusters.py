"""Three single-node clusters on loopback (a primary, a performance and a DR secondary).

Each is a real ``coffer server`` on Raft launched through ``harness.cluster``;
the helpers here are the operator's steps from docs/replication.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import wait
from harness.cluster import Cluster, Node
from harness.ports import free_port
from harness.rest import NO_ANSWER, Reply

__all__ = [
    "RING",
    "SMALL_RING",
    "Site",
    "bootstrapped_pair",
    "node_ok",
    "replication_pair",
    "wait_until",
]

_RETRY = (*NO_ANSWER, AssertionError, ValueError, KeyError, TypeError)


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.2) -> Any:
    return wait.wait_until(check, timeout, what, every, retry_on=_RETRY)


@dataclass
class SiteNode(Node):
    """A node whose config file ends with ``extra_config`` (e.g. a ``replication`` stanza)."""

    extra_config: str = ""

    def config_text(self) -> str:
        return super().config_text() + self.extra_config


class Site(Cluster):
    """One single-node cluster; ``token`` is whatever token works on it now."""

    node_type = SiteNode

    def __init__(self, base: Path, extra_config: str = "") -> None:
        super().__init__(base, 1)
        for node in self.nodes:
            assert isinstance(node, SiteNode)
            node.extra_config = extra_config
        self.token = ""
        #: A batch DR operation token, once a test made one.
        self.dr_token = ""

    @property
    def node0(self) -> Node:
        return self.nodes[0]

    def start(self) -> Site:
        self.bootstrap(shares=3, threshold=2)
        self.token = self.root_token
        return self

    def call(self, method: str, path: str, body: Any = None, token: str | None = None) -> Reply:
        return self.node0.request(
            method, f"/v1/{path}", body, token=self.token if token is None else token
        )

    def ok(self, method: str, path: str, body: Any = None) -> Reply:
        reply = self.call(method, path, body)
        assert reply.status in (200, 204), f"{method} {path}: {reply.status} {reply.body[:400]!r}"
        return reply

    def status(self, kind: str) -> dict[str, Any]:
        reply = self.call("GET", f"sys/replication/{kind}/status", token="")
        assert reply.status == 200, reply.body
        data: dict[str, Any] = reply.json["data"]
        return data

    def enable_primary(self, kind: str) -> str:
        address = f"127.0.0.1:{free_port()}"
        self.ok("POST", f"sys/replication/{kind}/primary/enable", {"primary_cluster_addr": address})
        return address

    def secondary_token(self, kind: str, secondary_id: str) -> str:
        reply = self.ok(
            "POST", f"sys/replication/{kind}/primary/secondary-token", {"id": secondary_id}
        )
        token: str = reply.json["wrap_info"]["token"]
        return token

    def become_secondary(self, kind: str, token: str, primary: Site) -> None:
        """Enable (which seals), unseal with the primary's keys, wait for the stream."""
        reply = self.ok("POST", f"sys/replication/{kind}/secondary/enable", {"token": token})
        assert reply.json["warnings"]
        # enable seals the node; seal-status waits for that seal and then says sealed
        assert self.call("GET", "sys/seal-status", token="").json["sealed"] is True
        self.keys, self.threshold = primary.keys, primary.threshold
        self.unseal(self.node0)
        serving = 472 if kind == "dr" else 200  # a DR secondary's active node answers 472
        wait_until(lambda: self.node0.health() == serving, 60, f"{kind} secondary active")
        self.token = ""
        wait_until(
            lambda: self.status(kind)["state"] == "stream-wals", 60, f"{kind} secondary streaming"
        )


#: WAL entries the primary of ``replication_pair`` keeps: a secondary that misses
#: more must catch up by a sync.
RING = 20
SMALL_RING = f"replication {{\n  logshipper_buffer_length = {RING}\n}}\n"


@contextmanager
def replication_pair(
    base: Path, kind: str, prepare: Callable[[Site], object] = lambda site: None
) -> Iterator[tuple[Site, Site]]:
    """A primary with a small WAL ring and a ``kind`` secondary streaming from it;
    ``prepare`` runs on the primary before replication is enabled."""
    started: list[Site] = []
    try:
        primary = Site(base / "primary", SMALL_RING).start()
        started.append(primary)
        secondary = Site(base / kind).start()
        started.append(secondary)
        prepare(primary)
        primary.enable_primary(kind)
        secondary.become_secondary(kind, primary.secondary_token(kind, f"{kind}1"), primary)
        yield primary, secondary
    finally:
        for site in started:
            site.close()


def node_ok(node: Node, method: str, path: str, body: object = None, token: str = "") -> Any:
    """One call to one node of a plain cluster that must succeed; its JSON (or {})."""
    reply = node.request(method, f"/v1/{path}", body, token=token or None)
    assert reply.status in (200, 204), f"{method} {path}: {reply.status} {reply.body[:300]!r}"
    return reply.json if reply.status == 200 else {}


@contextmanager
def bootstrapped_pair(base: Path) -> Iterator[tuple[Cluster, Cluster]]:
    """Two three-node clusters, initialised and unsealed, not yet replicating."""
    primary, secondary = Cluster(base / "p", 3), Cluster(base / "s", 3)
    try:
        primary.bootstrap()
        secondary.bootstrap()
        yield primary, secondary
    finally:
        primary.close()
        secondary.close()
