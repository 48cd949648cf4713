"""Three real ``coffer server`` processes: a read whose handler writes, sent to a
performance standby, runs on the active node, once.

The standby's storage refuses the write (read-only in the core), so nothing
is applied there, and the request is forwarded whole: the answer comes from
the active node, the count moves by one per request (not two), and the
standby reads the new count afterwards (read-your-writes). With the rule
only at the HTTP edge, the standby would run the handler itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness import process as launch
from tests.cluster import writes_on_read
from tests.cluster.servers import ROOT, Cluster, Node, Reply

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(launch, "coffer_command", lambda: writes_on_read.command(ROOT))
        nodes = Cluster(tmp_path_factory.mktemp("readonly"), 3)
        try:
            nodes.bootstrap()
            active = nodes.active()
            reply = active.request(
                "POST",
                "/v1/sys/auth/probe",
                {"type": writes_on_read.TYPE},
                token=nodes.root_token,
            )
            assert reply.status == 204, reply
            yield nodes
        finally:
            nodes.close()
    for node in nodes.nodes:
        assert "Traceback" not in node.log_text(), node.log_tail()


def _get(node: Node, cluster: Cluster, path: str) -> Reply:
    reply = node.request("GET", f"/v1/auth/probe/{path}", token=cluster.root_token)
    assert reply.status == 200, reply
    return reply


def _peek(node: Node, cluster: Cluster) -> tuple[int, str]:
    data = _get(node, cluster, "peek").json["data"]
    return data["count"], data["served_by"]


@pytest.mark.parametrize("path", ["count", "quiet-count"])
def test_a_read_that_writes_on_a_standby_runs_on_the_active_node(
    cluster: Cluster, path: str
) -> None:
    active = cluster.active()
    for standby in cluster.standbys():
        before, where = _peek(standby, cluster)
        assert where == standby.name  # a plain read is served by the standby itself
        reply = _get(standby, cluster, path)
        assert reply.json["data"] == {"count": before + 1, "served_by": active.name}
        assert "x-coffer-index" in reply.headers  # the active node's answer, relayed
        # Applied once, on the active node, and already visible on the standby.
        assert _peek(active, cluster) == (before + 1, active.name)
        assert _peek(standby, cluster) == (before + 1, standby.name)


def test_the_engine_writes_on_the_active_node_itself(cluster: Cluster) -> None:
    active = cluster.active()
    before, _ = _peek(active, cluster)
    assert _get(active, cluster, "count").json["data"] == {
        "count": before + 1,
        "served_by": active.name,
    }


def test_a_standby_still_seals_itself(cluster: Cluster) -> None:
    """``sys/seal`` is node-local and runs through the read-only pipeline on a
    standby: it writes nothing, so it seals that node, not the active one."""
    active = cluster.active()
    standby = cluster.standbys()[0]
    reply = standby.request("PUT", "/v1/sys/seal", token=cluster.root_token)
    assert reply.status == 204, reply
    assert cluster.sealed(standby)
    assert active.health() == 200
    cluster.unseal(standby)
    cluster.wait_roles()
