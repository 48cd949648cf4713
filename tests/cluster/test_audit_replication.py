"""Audit configuration is replicated: three real nodes on Raft, one ``socket`` device.

Enabled on the active node, the device appears on every standby (the audit
table is one barrier record that Raft carries, reloaded on apply), each node
opens its own connection to the collector and audits what it serves itself,
all with the same salt; disabled through a standby (forwarded to the active
node), it goes from every node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.servers import Node, bootstrapped, wait_until
from tests.support.line_listener import listening

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_audit_devices_are_replicated_to_standbys(tmp_path: Path) -> None:
    with bootstrapped(tmp_path, 3) as cluster, listening() as collector:
        root = cluster.root_token
        active = cluster.active()
        standbys = cluster.standbys()
        assert len(standbys) == 2
        device = {
            "type": "socket",
            "description": "collector",
            "options": {"address": f"127.0.0.1:{collector.port}"},
            "local": True,
        }
        reply = active.request("PUT", "/v1/sys/audit/net", device, token=root)
        assert reply.status == 204, reply
        put = active.request("PUT", "/v1/secret/data/app", {"data": {"k": "v"}}, token=root)
        assert put.status == 200, put

        for node in standbys:

            def listed(node: Node = node) -> bool:
                found = node.request("GET", "/v1/sys/audit", token=root)
                return found.status == 200 and "net/" in found.json["data"]

            wait_until(listed, 20, f"the device listed on {node.name}")
            shown = node.request("GET", "/v1/sys/audit", token=root).json["data"]["net/"]
            assert shown == {
                "type": "socket",
                "description": "collector",
                "options": {"address": f"127.0.0.1:{collector.port}"},
                "local": True,
                "path": "net/",
            }

        # Every node audits what it serves itself, on its own connection, with the one salt.
        ids = {}
        for node in [active, *standbys]:
            read = node.request("GET", "/v1/secret/data/app", token=root)
            assert read.status == 200, read
            ids[node.name] = read.json["request_id"]
        wait_until(
            lambda: all(
                any(rid.encode() in line for line in collector.lines) for rid in ids.values()
            ),
            20,
            "every node's read at the collector",
        )
        connections = {
            number
            for number, line in collector.received
            if any(rid.encode() in line for rid in ids.values())
        }
        assert len(connections) == 3
        expected = (
            standbys[0]
            .request("POST", "/v1/sys/audit-hash/net", {"input": root}, token=root)
            .json["data"]["hash"]
        )
        for line in collector.lines:
            entry = json.loads(line)
            if entry["request"].get("id") in ids.values():
                assert entry["auth"]["client_token"] == expected

        # Disabled through a standby: the write goes to the active node, every node drops it.
        gone = standbys[1].request("DELETE", "/v1/sys/audit/net", token=root)
        assert gone.status == 204, gone
        for node in [active, *standbys]:

            def emptied(node: Node = node) -> bool:
                return bool(node.request("GET", "/v1/sys/audit", token=root).json["data"] == {})

            wait_until(emptied, 20, f"the device gone from {node.name}")
        before = len(collector.lines)
        for node in [active, *standbys]:
            assert node.request("GET", "/v1/secret/data/app", token=root).status == 200
        assert len(collector.lines) == before
