"""Three real ``coffer server`` processes: a read whose handler writes, sent to a
performance standby, runs on the active node, once.

The standby's storage refuses the write (read-only in the core), so nothing
is applied there, and the request is forwarded whole: the answer comes from
the active node, the count moves by one per request (not two), and the
standby reads the new count afterwards (read-your-writes). With the rule
only at the HTTP edge, the standby would run the handler itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness import process as launch
from tests.cluster import writes_on_read
from tests.cluster.servers import ROOT, Cluster, Node, Reply, wait_until
from tests.support.line_listener import listening

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
            for standby in nodes.standbys():  # the mount reaches each standby by Raft
                wait_until(
                    lambda node=standby: (
                        node.request("GET", "/v1/auth/probe/peek", token=nodes.root_token).status
                        == 200
                    ),
                    20,
                    f"the probe mounted on {standby.name}",
                )
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


def _entries(lines: list[bytes], path: str) -> list[dict[str, Any]]:
    found = (json.loads(line) for line in lines)
    return [entry for entry in found if entry["request"].get("path") == path]


def test_forwarded_requests_are_marked_in_the_audit_entries_of_both_nodes(
    cluster: Cluster,
) -> None:
    """As the reference's Enterprise edition marks them: the active node's request
    entry names the standby it came from, every response entry of the request says
    ``forwarded``; a request a client sends to the active node has neither."""
    root, active = cluster.root_token, cluster.active()
    standby = cluster.standbys()[0]
    with listening() as collector:
        device = {"type": "socket", "options": {"address": f"127.0.0.1:{collector.port}"}}
        assert active.request("PUT", "/v1/sys/audit/net", device, token=root).status == 204
        try:
            wait_until(
                lambda: "net/" in standby.request("GET", "/v1/sys/audit", token=root).json["data"],
                20,
                "the device on the standby",
            )
            # A read whose handler writes: the standby's pipeline hands it on.
            _get(standby, cluster, "count")
            wait_until(
                lambda: len(_entries(collector.lines, "auth/probe/count")) >= 4,
                20,
                "four entries",
            )
            entries = _entries(collector.lines, "auth/probe/count")
            requests = [e for e in entries if e["type"] == "request"]
            responses = [e for e in entries if e["type"] == "response"]
            assert len(requests) == len(responses) == 2, entries
            [on_active] = [e for e in requests if "forwarded_from" in e]
            host, _, port = on_active["forwarded_from"].rpartition(":")
            assert host.startswith("127.") and port.isdigit()
            assert all(e["forwarded"] is True for e in responses)
            [handed_on] = [e for e in responses if "error" in e]
            assert "active node" in handed_on["error"] and handed_on["response"] == {}
            [answered] = [e for e in responses if "error" not in e]
            hashed = active.request(
                "POST", "/v1/sys/audit-hash/net", {"input": active.name}, token=root
            ).json["data"]["hash"]
            assert answered["response"]["data"]["served_by"] == hashed  # the active's answer

            # A write the standby's edge relays at once: audited on the active node only.
            put = standby.request(
                "PUT", "/v1/secret/data/relayed", {"data": {"k": "v"}}, token=root
            )
            assert put.status == 200, put
            wait_until(
                lambda: len(_entries(collector.lines, "secret/data/relayed")) >= 2,
                20,
                "the write's entries",
            )
            written = _entries(collector.lines, "secret/data/relayed")
            assert [e["type"] for e in written] == ["request", "response"]
            assert written[0]["forwarded_from"].startswith("127.")
            assert written[1]["forwarded"] is True

            # Sent to the active node by the client: no marks.
            put = active.request("PUT", "/v1/secret/data/direct", {"data": {"k": "v"}}, token=root)
            assert put.status == 200, put
            wait_until(
                lambda: len(_entries(collector.lines, "secret/data/direct")) >= 2,
                20,
                "the direct write's entries",
            )
            for entry in _entries(collector.lines, "secret/data/direct"):
                assert "forwarded" not in entry and "forwarded_from" not in entry
        finally:
            gone = active.request("DELETE", "/v1/sys/audit/net", token=root)
            assert gone.status == 204, gone
            wait_until(
                lambda: standby.request("GET", "/v1/sys/audit", token=root).json["data"] == {},
                20,
                "the device gone from the standby",
            )


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
