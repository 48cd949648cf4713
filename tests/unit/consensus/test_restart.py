"""A restart loads the last dump and replays only the journal after it.

pysyncobj compacts after ``compaction_min_entries`` entries or
``compaction_min_time``; a batch entry can carry hundreds of writes, so a
busy node used to keep its whole history in the journal and replay all of
it on every start (25 s to ready with 100,000 secrets). The store now also
compacts once the journal outgrew the dump (:meth:`SnapshotStore.compactionPoint`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from consensus.backend import RaftBackend
from harness.raft import make_config

VALUE = 100_000
#: A floor far below the default keeps the test small; the rule is the same.
COMPACT_BYTES = 4 * 1024 * 1024


async def test_a_big_journal_is_compacted_and_a_restart_replays_only_its_tail(
    tmp_path: Path,
) -> None:
    root = tmp_path / "raft"
    writes = COMPACT_BYTES // VALUE + 10  # few entries, many bytes
    config = make_config(root, compaction_min_bytes=COMPACT_BYTES)
    backend = await RaftBackend.open(config)
    try:
        await backend.wait_for_leader(10)
        for n in range(writes):
            await backend.put(f"big/{n}", os.urandom(VALUE))
        for _ in range(500):
            if (root / "dump.jsonl").exists() and backend._node._journal.size_bytes < (
                COMPACT_BYTES
            ):
                break
            await asyncio.sleep(0.02)
        assert (root / "dump.jsonl").exists(), "compacted for its size, far below 5000 entries"
        last = await backend.put("after/dump", b"x")
    finally:
        await backend.close()

    backend = await RaftBackend.open(config)
    try:
        await backend.wait_for_leader(10)
        journal = backend._node._journal
        assert len(journal) < writes // 2, "the restart replays the tail, not the history"
        assert (await backend.get("after/dump")) is not None
        assert (await backend.get(f"big/{writes - 1}")) is not None
        assert backend.applied_index() >= last
    finally:
        await backend.close()


def test_no_compaction_point_while_a_dump_is_being_written(tmp_path: Path) -> None:
    """Otherwise every entry applied during a long dump would end its tick's apply loop."""
    import threading

    from consensus.dumps import SnapshotStore
    from consensus.journal import DurableJournal
    from consensus.state import KVState

    tmp_path.chmod(0o700)
    journal = DurableJournal(tmp_path / "journal")
    store = SnapshotStore(
        tmp_path / "dump.jsonl", KVState(), journal, chunk=4096, compact_bytes=COMPACT_BYTES
    )
    try:
        assert store.compactionPoint(10, 100, True), "the entry count is due"
        assert not store.compactionPoint(11, COMPACT_BYTES - 200, False)
        assert store.compactionPoint(12, 200, False), "past the floor of applied entries"
        store._writer = threading.Thread()  # a dump under way
        assert not store.compactionPoint(13, COMPACT_BYTES, True)
    finally:
        store._writer = None
        store.close()
        journal._destroy()
