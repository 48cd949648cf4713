"""A leader cut off from its peers by the firewall: it must not acknowledge writes.

Every node's Raft traffic uses its own loopback IP (outgoing connections
included), so two iptables rules on the leader's IP isolate exactly its Raft
links while every API stays reachable on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.servers import Cluster, Node, Reply, wait_until
from tests.conftest import require

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(180)]


def _iptables(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["iptables", "-w", "5", *args], capture_output=True, check=False)


def iptables_usable() -> bool:
    return (
        shutil.which("iptables") is not None
        and os.geteuid() == 0
        and _iptables("-L", "INPUT", "-n").returncode == 0
    )


@contextlib.contextmanager
def partitioned(ip: str) -> Iterator[None]:
    rules = [("-s", ip), ("-d", ip)]
    added = []
    try:
        for flag, address in rules:
            result = _iptables("-I", "INPUT", flag, address, "-j", "DROP")
            assert result.returncode == 0, result.stderr
            added.append((flag, address))
        yield
    finally:
        for flag, address in added:
            _iptables("-D", "INPUT", flag, address, "-j", "DROP")


def test_partitioned_leader_acknowledges_nothing(tmp_path: Path) -> None:
    require(iptables_usable(), "iptables (as root) is needed to partition a node")
    cluster = Cluster(tmp_path, 3)
    try:
        cluster.bootstrap()
        token = cluster.root_token
        old = cluster.active()
        others = [n for n in cluster.nodes if n is not old]

        def put(node: Node, key: str, timeout: float = 15) -> Reply:
            return node.request(
                "PUT", f"/v1/secret/data/{key}", {"data": {"k": key}}, token=token, timeout=timeout
            )

        assert put(old, "before").status == 200
        outcome: list[Reply | BaseException] = []
        with partitioned(old.raft_ip):
            started = time.monotonic()

            def lost_write() -> None:
                try:
                    outcome.append(put(old, "lost", timeout=30))
                except OSError as exc:  # a timeout is as good as an error here
                    outcome.append(exc)

            writer = threading.Thread(target=lost_write)
            writer.start()
            new = cluster.active(among=others, timeout=20)
            print(f"\nnew active {new.name} {time.monotonic() - started:.2f}s after the partition")
            assert put(new, "majority").status == 200
            writer.join(40)
            assert outcome, "the write to the partitioned leader never finished"
            result = outcome[0]
            print(f"the partitioned leader answered the write with {result!r}")
            assert not (isinstance(result, Reply) and result.status < 300), result
            assert old.health() != 200  # it stepped down
            # Cut off, it knows no active node: a write is refused before it starts.
            refused = wait_until(
                lambda: (r := put(old, "refused")).status == 503 and r, 10, "no active node"
            )
            assert refused.json["errors"] == ["no active node"]
        # Healed: the old leader follows the new one and its write never appears.
        wait_until(lambda: old.health() == 473, 20, "the old leader as a standby")
        wait_until(
            lambda: old.request("GET", "/v1/secret/data/majority", token=token).status == 200,
            10,
            "the old leader to catch up",
        )
        time.sleep(0.5)
        for node in cluster.nodes:
            assert node.request("GET", "/v1/secret/data/lost", token=token).status == 404
            assert node.request("GET", "/v1/secret/data/refused", token=token).status == 404
            assert node.request("GET", "/v1/secret/data/before", token=token).status == 200
    finally:
        cluster.close()


def test_a_cut_off_active_node_stops_serving_before_another_is_elected(tmp_path: Path) -> None:
    """The leader lease: by the time the majority has a new active node, the
    cut-off one no longer says 200 on sys/health and refuses writes. (Once it
    has stepped down it is a standby that lost its leader; whether such a node
    still serves local reads is the performance standby's staleness bound.)"""
    require(iptables_usable(), "iptables (as root) is needed to partition a node")
    cluster = Cluster(tmp_path, 3)
    try:
        cluster.bootstrap()
        token = cluster.root_token
        old = cluster.active()
        others = [n for n in cluster.nodes if n is not old]
        path = "/v1/secret/data/leased"
        assert old.request("PUT", path, {"data": {"v": "1"}}, token=token).status == 200
        assert old.health() == 200
        assert old.request("GET", path, token=token).status == 200

        with partitioned(old.raft_ip):
            new = cluster.active(among=others, timeout=20)
            assert old.health() != 200
            write = old.request("PUT", path, {"data": {"v": "2"}}, token=token, timeout=15)
            assert write.status == 503, (write.status, write.json)
            assert write.json["errors"] == ["no active node"]
            assert new.request("PUT", path, {"data": {"v": "3"}}, token=token).status == 200
        wait_until(lambda: old.health() == 473, 20, "the old leader as a standby")
    finally:
        cluster.close()
