"""A secondary that was down while the primary dropped its position catches up by sync.

The primary keeps recent WALs in a bounded ring (the ``replication`` stanza's
``logshipper_buffer_length``, 20 here): a secondary whose last applied WAL fell
out of it while it was down cannot resume from the stream. Restarted, it runs
the hash-tree sync (merkle-diff, merkle-sync) from the position it had, then
streams again, and every key matches the primary's (same ``merkle_root``):
writes, an overwrite and a delete made while it was down.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.replication.clusters import RING, Site, replication_pair, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.serial]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Site, Site]]:
    with replication_pair(tmp_path, "dr") as sites:
        yield sites


def _synced(site: Site) -> list[dict[str, Any]]:
    """The secondary's ``replication.synced`` log events, oldest first (across restarts)."""
    events = []
    for line in site.node0.log_text().splitlines():
        if '"replication.synced"' in line:
            events.append(json.loads(line[line.index("{") :]))
    return events


def test_a_secondary_down_past_the_primarys_wal_ring_catches_up_by_sync(
    pair: tuple[Site, Site],
) -> None:
    primary, dr = pair
    for i in range(5):
        primary.ok("POST", f"secret/data/early{i}", {"data": {"v": i}})

    def caught_up(not_root: str = "") -> str:
        """The common root once the secondary streams and matches (``not_root``: an older one)."""
        theirs, mine = primary.status("dr"), dr.status("dr")
        assert mine["state"] == "stream-wals"
        assert mine["merkle_root"] and mine["merkle_root"] == theirs["merkle_root"]
        assert mine["merkle_root"] != not_root
        root: str = mine["merkle_root"]
        return root

    wait_until(caught_up, 30, "the DR secondary to catch up")
    position = dr.status("dr")["last_remote_wal"]
    syncs_before = len(_synced(dr))
    dr.node0.kill()

    for i in range(3 * RING):  # far more WALs than the primary keeps
        primary.ok("POST", f"secret/data/while-down{i}", {"data": {"v": i}})
    primary.ok("POST", "secret/data/early0", {"data": {"v": "overwritten"}})
    primary.ok("DELETE", "secret/metadata/early1")
    assert primary.status("dr")["last_wal"] > position + RING

    dr.node0.start()
    dr.unseal(dr.node0)
    wait_until(caught_up, 60, "the restarted DR secondary to catch up")

    synced = _synced(dr)[syncs_before:]
    assert synced, "it resumed from the stream: the ring still held its position?"
    assert synced[0]["from_wal"] == position  # a sync from where it stopped, not a bootstrap
    assert isinstance(synced[0]["buckets"], int) and synced[0]["buckets"] > 0
    assert dr.status("dr")["state"] == "stream-wals"

    # and it streams again afterwards
    root = caught_up()
    primary.ok("POST", "secret/data/after", {"data": {"v": "streamed"}})
    wait_until(lambda: caught_up(not_root=root), 30, "the write after the sync")


def test_a_secondary_that_resumes_caught_up_reports_streaming(pair: tuple[Site, Site]) -> None:
    """Restarted with nothing new on the primary, it resumes from its position (no
    sync) and gets heartbeats only: it is streaming all the same, as Vault reports."""
    primary, dr = pair
    primary.ok("POST", "secret/data/before", {"data": {"v": 1}})

    def streaming_at(position: int) -> bool:
        mine = dr.status("dr")
        return mine["state"] == "stream-wals" and mine["last_remote_wal"] == position

    last = primary.status("dr")["last_wal"]
    wait_until(lambda: streaming_at(last), 30, "the DR secondary to stream")
    syncs_before = len(_synced(dr))
    dr.node0.kill()
    dr.node0.start()
    dr.unseal(dr.node0)

    wait_until(lambda: streaming_at(last), 30, "the restarted secondary to report streaming")
    assert primary.status("dr")["last_wal"] == last  # nothing was written meanwhile
    assert len(_synced(dr)) == syncs_before  # it resumed: no sync
