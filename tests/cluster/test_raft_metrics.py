"""``sys/metrics`` of three real ``coffer server`` processes: the replica's commit
and fsync latencies and its batching, as Prometheus histograms and counters."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.servers import Cluster, Node, bootstrapped

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WRITES = 60


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with bootstrapped(tmp_path_factory.mktemp("raft-metrics"), 3) as nodes:
        yield nodes


def scrape(node: Node, cluster: Cluster) -> dict[str, dict[str, float]]:
    """Each sample's value by family, then by sample name and ``le``."""
    reply = node.request("GET", "/v1/sys/metrics?format=prometheus", token=cluster.root_token)
    assert reply.status == 200, reply
    samples: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(reply.body.decode()):
        for sample in family.samples:
            key = sample.name + (f"@{sample.labels['le']}" if "le" in sample.labels else "")
            samples.setdefault(family.name, {})[key] = sample.value
    return samples


def histogram(samples: dict[str, dict[str, float]], name: str) -> tuple[list[float], float, float]:
    """Cumulative bucket counts in bound order, the count and the sum."""
    family = samples[name]
    buckets = sorted(
        (float(key.split("@")[1]), value) for key, value in family.items() if "@" in key
    )
    assert buckets[-1][0] == float("inf")
    return [count for _, count in buckets], family[name + "_count"], family[name + "_sum"]


def write_many(node: Node, cluster: Cluster, prefix: str) -> None:
    def write(i: int) -> int:
        reply = node.request(
            "PUT", f"/v1/secret/data/{prefix}{i}", {"data": {"n": str(i)}}, token=cluster.root_token
        )
        return reply.status

    with ThreadPoolExecutor(max_workers=12) as pool:
        assert set(pool.map(write, range(WRITES))) == {200}


def test_the_active_node_reports_each_entrys_commit_and_the_writes_it_carried(
    cluster: Cluster,
) -> None:
    active = cluster.active()
    before = scrape(active, cluster)

    write_many(active, cluster, "m")

    after = scrape(active, cluster)
    buckets, count, total = histogram(after, "coffer_raft_commit_seconds")
    assert buckets == sorted(buckets), "buckets are cumulative"
    assert buckets[-1] == count
    entries = after["coffer_raft_entries"]["coffer_raft_entries_total"]
    commands = after["coffer_raft_commands"]["coffer_raft_commands_total"]
    new_entries = entries - before["coffer_raft_entries"]["coffer_raft_entries_total"]
    new_commands = commands - before["coffer_raft_commands"]["coffer_raft_commands_total"]
    assert new_commands >= WRITES, "every write was submitted here"
    assert 1 <= new_entries <= new_commands
    _, count_before, _ = histogram(before, "coffer_raft_commit_seconds")
    assert 1 <= count - count_before <= new_entries, "one observation per committed entry"
    assert total > 0
    fsyncs, fsync_count, fsync_total = histogram(after, "coffer_raft_fsync_seconds")
    assert fsync_count > 0 and fsync_total > 0 and fsyncs == sorted(fsyncs)


def test_a_standby_reports_the_fsyncs_of_the_entries_it_stored(cluster: Cluster) -> None:
    active = cluster.active()
    standby = cluster.standbys()[0]
    _, before, _ = histogram(scrape(standby, cluster), "coffer_raft_fsync_seconds")

    write_many(active, cluster, "s")

    _, after, _ = histogram(scrape(standby, cluster), "coffer_raft_fsync_seconds")
    assert after > before


def test_the_json_format_carries_the_same_series(cluster: Cluster) -> None:
    reply = cluster.active().request("GET", "/v1/sys/metrics", token=cluster.root_token)
    assert reply.status == 200, reply
    names = {sample["Name"] for sample in reply.json["Samples"]}
    assert {"coffer_raft_commit_seconds_count", "coffer_raft_fsync_seconds_bucket"} <= names
