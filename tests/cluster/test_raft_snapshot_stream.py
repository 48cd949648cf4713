"""Streamed snapshots between real node processes (consensus/snapshot_stream.py).

A follower that was down while the others compacted past its log gets the
leader's dump in small acknowledged chunks; when leadership moves in the
middle, the new leader, holding the same dump, continues from the byte the
follower reached instead of starting again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.raft_cluster import Cluster, NodeProcess, running
from harness.wait import wait_until
from tests.cluster.test_raft_backend_cluster import (
    assert_all_present,
    compacted_past,
    load_until,
    run_load,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

#: Small chunks, so that a dump of a few thousand keys takes many round trips.
CHUNK = 2048


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    settings = {"compaction_min_entries": 200, "snapshot_chunk_bytes": CHUNK}
    with running(tmp_path, **(settings | getattr(request, "param", {}))) as nodes:
        yield nodes


def data_dir(node: NodeProcess) -> Path:
    return Path(node.config["data_dir"])


def test_a_follower_behind_the_compaction_catches_up_by_a_streamed_snapshot(
    cluster: Cluster,
) -> None:
    leader = cluster.wait_for_leader()
    victim, other = cluster.followers(leader)
    before = run_load([other], seconds=0.5)

    victim.kill()
    down_at = leader.request("put", key="victim-down", value="1")  # past the victim's log
    past_the_victim = compacted_past(leader, down_at)
    leader_dump = data_dir(leader) / "dump.jsonl"
    during = load_until(
        [leader, other],
        lambda: past_the_victim() and leader_dump.stat().st_size > 20 * CHUNK,
        "a compaction past the victim into a dump of many chunks",
    )
    assert leader.request("log_start") >= down_at, "compacted past the victim"
    victim.start()
    after = run_load([leader, other], seconds=1.0)  # writes go on during the transfer

    assert_all_present(cluster, before["acked"] | during["acked"] | after["acked"])
    installed = re.findall(r"installed a snapshot at index (\d+)", victim.log_text())
    assert installed, "the leader had compacted past the follower"
    assert (data_dir(victim) / "dump.jsonl").stat().st_size > 20 * CHUNK, "many chunks"
    assert not list(data_dir(victim).glob("dump.jsonl.incoming*")), "the partial is gone"


BIG_CHUNK = 32 * 1024


@pytest.mark.parametrize(
    "cluster",
    [
        {
            "compaction_min_entries": 100_000,
            "compaction_min_bytes": 4 * 1024 * 1024,
            "snapshot_chunk_bytes": BIG_CHUNK,
        }
    ],
    indirect=True,
)
def test_leadership_moves_during_the_transfer_and_the_transfer_resumes(cluster: Cluster) -> None:
    leader = cluster.wait_for_leader()
    victim, other = cluster.followers(leader)
    victim.kill()
    # About 6 MB of entries: past the 4 MiB (this test's floor) at which every node
    # compacts by size, at an index chosen from the entries alone (no forced compaction).
    for n in range(70):
        leader.request("put", key=f"big/{n}", value=f"{n:03d}" * 20_000)
    load = run_load([leader, other], seconds=1.0)
    cluster.wait_converged()
    dumps = [data_dir(node) / "dump.jsonl" for node in (leader, other)]

    def same_dump() -> bool:
        try:
            first, second = (path.read_bytes() for path in dumps)
        except FileNotFoundError:
            return False
        return first == second and b'"end"' in first

    wait_until(same_dump, 20, "the two nodes did not compact at the same index")
    size = dumps[0].stat().st_size
    assert size > 40 * BIG_CHUNK

    victim.start()
    partial = data_dir(victim) / "dump.jsonl.incoming"
    wait_until(
        lambda: partial.exists() and partial.stat().st_size >= size // 4,
        30,
        "the transfer never started",
    )
    leader.kill()
    successor = cluster.wait_for_leader()
    assert successor is other

    assert_all_present(cluster, load["acked"])
    resumed = [
        int(n) for n in re.findall(r"resuming a snapshot transfer at byte (\d+)", other.log_text())
    ]
    assert resumed, "the new leader continued where the follower stood"
    assert resumed[-1] >= size // 4
    assert "installed a snapshot" in victim.log_text()
    assert "dropping" not in victim.log_text(), "the follower never started again from zero"
