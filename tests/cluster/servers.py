"""A cluster of real ``coffer server`` processes on loopback, for the HA tests.

The launcher is :mod:`harness.cluster` (the chaos tool's too); this module only
sets what the tests want differently. Raft runs on 127.0.0.11, .12, ... (Linux
routes all of 127/8 to ``lo``, and consensus binds outgoing Raft connections to
that IP too), so a firewall rule on one IP isolates exactly that node's Raft
traffic while its API stays reachable. Tokens go in ``X-Service-Token``; a wait
that times out fails the test with ``AssertionError``; and bootstrap ends with
one active node and performance standbys (473), which the tests rely on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from harness import cluster as harness_cluster
from harness import wait
from harness.process import assert_logs_free_of
from harness.rest import NO_ANSWER, SERVICE_TOKEN, Reply

__all__ = ["ROOT", "Cluster", "Node", "Reply", "bootstrapped", "wait_until"]

ROOT = Path(__file__).resolve().parents[2]

#: What a test's poll may raise while the cluster is still changing: not yet, try again.
_RETRY = (*NO_ANSWER, AssertionError, ValueError)


def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.1) -> Any:
    """Poll ``check`` until it returns something truthy; fails the test on timeout."""
    return wait.wait_until(check, timeout, what, every, retry_on=_RETRY)


class Node(harness_cluster.Node):
    TOKEN_HEADER = SERVICE_TOKEN
    REQUEST_TIMEOUT = 15.0
    HEALTH_TIMEOUT = 5.0
    CWD = ROOT


class Cluster(harness_cluster.Cluster):
    """``size`` nodes; every node but the first retry-joins the first (optional)."""

    node_type: ClassVar[type[harness_cluster.Node]] = Node
    nodes: list[Node]  # type: ignore[assignment]  # built by node_type

    def __init__(self, base: Path, size: int, *, retry_join: bool = True, extra_raft: str = ""):
        super().__init__(
            base, size, raft_net="127.0.0", retry_join=retry_join, extra_raft=extra_raft
        )

    def close(self) -> None:
        """One node after the other, so no node stops while its peers are stopping too."""
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()

    def unseal(
        self, node: harness_cluster.Node, timeout: float = 60, *, request_timeout: float = 60
    ) -> None:
        super().unseal(node, timeout, request_timeout=request_timeout)

    def wait_settled(self, timeout: float = 60) -> None:
        self.wait_roles()

    def active(
        self, among: Sequence[harness_cluster.Node] | None = None, timeout: float = 20
    ) -> Node:
        found = super().active(among, timeout)
        assert isinstance(found, Node)
        return found

    def wait_roles(self, timeout: float = 30, standby_code: int = 473) -> None:
        """One active node; every other running node a (performance) standby."""

        def check() -> bool:
            codes = sorted(n.health() for n in self.nodes if n.running)
            return codes == [200] + [standby_code] * (len(codes) - 1)

        wait_until(check, timeout, "one active node and standbys")

    def standbys(self) -> list[Node]:
        active = self.active()
        return [n for n in self.nodes if n.running and n is not active]


@contextlib.contextmanager
def bootstrapped(
    base: Path, size: int, forbidden: Sequence[str] = ("Traceback",)
) -> Iterator[Cluster]:
    """A bootstrapped cluster, closed afterwards; then no node's log may hold any of
    ``forbidden`` (checked only when the tests using it passed)."""
    nodes = Cluster(base, size)
    try:
        nodes.bootstrap()
        yield nodes
    finally:
        nodes.close()
    assert_logs_free_of(nodes.nodes, forbidden)
