"""The barrier's read cache on performance standbys of three real ``coffer server`` processes.

A standby serves reads from its replica through its own read cache; changes
arrive as applied Raft entries, whose keys must drop the cached values. Each
test first reads on the standby (so the value, or its absence, is cached
there), then changes it through another node: without invalidation the
standby would keep answering with the old value for ever.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.servers import Cluster, Node, Reply, bootstrapped, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

DATA = "/v1/secret/data/"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with bootstrapped(tmp_path_factory.mktemp("cache"), 3) as nodes:
        yield nodes


def write(node: Node, cluster: Cluster, path: str, data: dict[str, str]) -> None:
    reply = node.request("PUT", DATA + path, {"data": data}, token=cluster.root_token)
    assert reply.status == 200, reply


def get(node: Node, cluster: Cluster, path: str) -> Reply:
    return node.request("GET", DATA + path, token=cluster.root_token)


def value(node: Node, cluster: Cluster, path: str) -> dict[str, str] | None:
    reply = get(node, cluster, path)
    if reply.status == 404:
        return None
    assert reply.status == 200, reply
    assert "x-coffer-index" not in reply.headers  # the standby answered itself
    data: dict[str, str] = reply.json["data"]["data"]
    return data


def cached_on(standby: Node, cluster: Cluster, path: str, expected: dict[str, str] | None) -> None:
    """Wait for replication, then read twice more: the later reads are cache hits."""
    wait_until(lambda: value(standby, cluster, path) == expected, 5, f"{path} replicated")
    for _ in range(2):
        assert value(standby, cluster, path) == expected


def eventually(standby: Node, cluster: Cluster, path: str, expected: dict[str, str] | None) -> None:
    wait_until(
        lambda: value(standby, cluster, path) == expected,
        5,
        f"{path} = {expected} on {standby.name}",
        every=0.02,
    )


def test_a_change_on_the_active_node_replaces_the_standbys_cached_value(cluster: Cluster) -> None:
    active, standby = cluster.active(), cluster.standbys()[0]
    write(active, cluster, "cache/changed", {"v": "1"})
    cached_on(standby, cluster, "cache/changed", {"v": "1"})

    write(active, cluster, "cache/changed", {"v": "2"})
    eventually(standby, cluster, "cache/changed", {"v": "2"})
    write(active, cluster, "cache/changed", {"v": "3"})
    eventually(standby, cluster, "cache/changed", {"v": "3"})


def test_deletes_read_back_404_on_the_standby(cluster: Cluster) -> None:
    active, standby = cluster.active(), cluster.standbys()[1]
    token = cluster.root_token
    for path in ("cache/soft", "cache/gone"):
        write(active, cluster, path, {"v": "here"})
        cached_on(standby, cluster, path, {"v": "here"})

    reply = active.request("DELETE", DATA + "cache/soft", token=token)  # the latest version
    assert reply.status == 204, reply
    reply = active.request("DELETE", "/v1/secret/metadata/cache/gone", token=token)  # everything
    assert reply.status == 204, reply
    eventually(standby, cluster, "cache/soft", None)
    eventually(standby, cluster, "cache/gone", None)
    assert get(standby, cluster, "cache/gone").status == 404


def test_a_key_cached_as_absent_appears_when_written(cluster: Cluster) -> None:
    active, standby = cluster.active(), cluster.standbys()[0]
    cached_on(standby, cluster, "cache/later", None)
    write(active, cluster, "cache/later", {"v": "now"})
    eventually(standby, cluster, "cache/later", {"v": "now"})


def test_a_write_relayed_by_the_standby_reads_back_at_once(cluster: Cluster) -> None:
    """Read-your-writes through the standby: it waits for the write's index, and
    its cache must already show the write when that wait ends (no polling)."""
    standby = cluster.standbys()[1]
    write(standby, cluster, "cache/ryw", {"round": "0"})
    cached_on(standby, cluster, "cache/ryw", {"round": "0"})
    for round_ in range(1, 6):
        write(standby, cluster, "cache/ryw", {"round": str(round_)})
        assert value(standby, cluster, "cache/ryw") == {"round": str(round_)}


def test_rotation_and_a_snapshot_restore_reach_the_cache(cluster: Cluster) -> None:
    active, standby = cluster.active(), cluster.standbys()[0]
    token = cluster.root_token
    write(active, cluster, "cache/restored", {"v": "snapshot"})
    cached_on(standby, cluster, "cache/restored", {"v": "snapshot"})
    assert active.request("POST", "/v1/sys/rotate", {}, token=token).status == 204
    assert value(standby, cluster, "cache/restored") == {"v": "snapshot"}
    reply = active.request("GET", "/v1/sys/storage/raft/snapshot", token=token)
    assert reply.status == 200
    snapshot = reply.body

    write(active, cluster, "cache/restored", {"v": "after"})  # under the new key term
    eventually(standby, cluster, "cache/restored", {"v": "after"})
    reply = active.request("POST", "/v1/sys/storage/raft/snapshot", token=token, raw=snapshot)
    assert reply.status == 204, reply
    eventually(standby, cluster, "cache/restored", {"v": "snapshot"})  # a reset: everything goes


def test_mount_tune_and_unmount_on_the_active_node_reach_the_standbys_router(
    cluster: Cluster,
) -> None:
    """The standby's mount table reconciles from the replicated ``core/mounts``:
    the new mount routes there, a tune shows in its config, an unmount unroutes it."""
    active, standby = cluster.active(), cluster.standbys()[1]
    token = cluster.root_token
    reply = active.request(
        "POST", "/v1/sys/mounts/lifecycle", {"type": "kv", "options": {"version": "2"}}, token=token
    )
    assert reply.status == 204, reply
    reply = active.request("PUT", "/v1/lifecycle/data/k", {"data": {"v": "1"}}, token=token)
    assert reply.status == 200, reply

    def on_standby(path: str) -> Reply:
        reply = standby.request("GET", path, token=token)
        assert "x-coffer-index" not in reply.headers  # the standby answered itself
        return reply

    def stored() -> object:
        reply = on_standby("/v1/lifecycle/data/k")
        return reply.json["data"]["data"] if reply.status == 200 else reply.status

    wait_until(lambda: stored() == {"v": "1"}, 5, "the new mount routed on the standby")

    reply = active.request(
        "POST", "/v1/sys/mounts/lifecycle/tune", {"default_lease_ttl": "1h"}, token=token
    )
    assert reply.status == 204, reply
    wait_until(
        lambda: on_standby("/v1/sys/mounts/lifecycle/tune").json["default_lease_ttl"] == 3600,
        5,
        "the tune on the standby",
    )
    assert stored() == {"v": "1"}  # the tuned mount still serves its data

    reply = active.request("DELETE", "/v1/sys/mounts/lifecycle", token=token)
    assert reply.status == 204, reply
    wait_until(lambda: stored() == 404, 5, "the mount gone from the standby")
