"""Three real ``coffer server`` processes: a standby's relaying when a node is cut
off or frozen (the healing suite's ``partition-follower`` and ``freeze-active``).

* A standby cut off from Raft (its API still reachable) relays a write to the
  active node and answers as soon as it knows it serves no local reads, not
  after waiting seconds for a replica that cannot catch up; a read through it
  then still returns that write (it forwards until it applied it).
* A request relayed to an active node that is frozen (SIGSTOP) is abandoned once
  the standby knows the new active node: a read is relayed to it, a write is
  answered 503 (it may or may not have been applied).
* The frozen node, resumed, never answers a read from the replica it froze with.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from api.forwarding import REPLACED
from tests.cluster.servers import Cluster, Node, Reply, wait_until
from tests.cluster.test_ha_partition import iptables_usable, partitioned
from tests.conftest import require

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path_factory.mktemp("relay-faults"), 3)
    try:
        nodes.bootstrap()
        yield nodes
    finally:
        nodes.close()
    for node in nodes.nodes:
        assert "Traceback" not in node.log_text(), node.log_tail()


def _write(node: Node, cluster: Cluster, path: str, value: str, timeout: float = 15) -> Reply:
    return node.request(
        "PUT",
        f"/v1/secret/data/{path}",
        {"data": {"v": value}},
        token=cluster.root_token,
        timeout=timeout,
    )


def _read(node: Node, cluster: Cluster, path: str, timeout: float = 15) -> Reply:
    return node.request("GET", f"/v1/secret/data/{path}", token=cluster.root_token, timeout=timeout)


def _value(reply: Reply) -> str:
    assert reply.status == 200, reply
    return str(reply.json["data"]["data"]["v"])


def test_a_cut_off_standby_relays_a_write_without_holding_it(cluster: Cluster) -> None:
    require(iptables_usable(), "iptables (as root) is needed to partition a node")
    cluster.wait_roles(timeout=60)
    standby = cluster.standbys()[0]
    assert _write(standby, cluster, "cut", "before").status == 200
    with partitioned(standby.raft_ip):
        started = time.monotonic()
        reply = _write(standby, cluster, "cut", "during")
        took = time.monotonic() - started
        assert reply.status == 200, reply
        # It waits only until it knows it lost the leader (election timer + the
        # 1 s leader-loss bound), no longer for its replica (5 s before).
        assert took < 3.5, took
        # Read-your-writes: never its replica's older value. It knows no active node
        # to forward to, so it says it is not caught up.
        got = _read(standby, cluster, "cut")
        if got.status != 200:
            assert got.status == 503 and got.errors[0].startswith("not caught up"), got
        else:
            assert _value(got) == "during"
    cluster.wait_roles(timeout=60)
    wait_until(lambda: _value(_read(standby, cluster, "cut")) == "during", 30, "caught up")


def test_a_request_relayed_to_a_frozen_active_node_is_not_held(cluster: Cluster) -> None:
    cluster.wait_roles(timeout=60)
    frozen = cluster.active()
    standby = cluster.standbys()[0]
    assert _write(frozen, cluster, "frozen", "before").status == 200
    wait_until(lambda: _value(_read(standby, cluster, "frozen")) == "before", 10, "replicated")
    assert frozen.proc is not None
    os.kill(frozen.proc.pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        started = time.monotonic()
        write = _write(standby, cluster, "frozen", "during", timeout=30)
        took = time.monotonic() - started
        # Relayed to the frozen node (the standby knows no other yet), then
        # abandoned once another node is elected: only the client may retry it.
        assert write.status in (200, 503), write
        if write.status == 503:
            assert write.errors == [REPLACED]
        assert took < 6, took
        # A read is relayed again (or served here): never held by the frozen node.
        started = time.monotonic()
        assert _read(standby, cluster, "frozen", timeout=30).status == 200
        assert time.monotonic() - started < 6
        assert _write(standby, cluster, "frozen", "after").status == 200
        # Frozen well past the staleness bound (1 s): its replica is that old.
        time.sleep(max(0.0, frozen_at + 4 - time.monotonic()))
    finally:
        os.kill(frozen.proc.pid, signal.SIGCONT)
    # Resumed: it has lost its lease and a newer value was written. Whatever it
    # answers at once (forwarded, or 503 not caught up), never its frozen replica.
    seen = []
    until = time.monotonic() + 3
    while time.monotonic() < until:
        reply = _read(frozen, cluster, "frozen", timeout=30)
        if reply.status == 200:
            seen.append(_value(reply))
        else:
            assert reply.status in (503, 429), reply
    assert set(seen) <= {"after"}, seen
    cluster.wait_roles(timeout=60)
    wait_until(lambda: _value(_read(frozen, cluster, "frozen")) == "after", 30, "caught up")
