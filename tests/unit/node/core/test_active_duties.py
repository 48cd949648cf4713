"""The active node's duties (lease expiry, replication) change one at a time.

The cluster watcher starts them once Raft made the node active, and a role
change (promote, demote, update-primary) restarts them from a request, which
can arrive in between. Two interleaved starts used to leave a second WAL feed,
replication client and expiry timer running that nobody would stop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from consensus.state import ChangeSet
from node.core.core import Core
from node.physical.file import FileBackend


def running(name: str) -> int:
    return sum(1 for task in asyncio.all_tasks() if task.get_name() == name and not task.done())


async def test_concurrent_starts_leave_one_feed_and_one_expiry_timer(tmp_path: Path) -> None:
    # ``file`` storage reads on worker threads: every start really suspends midway.
    core = Core(FileBackend(tmp_path))
    await core.dev_bootstrap()
    try:
        await asyncio.gather(
            core.start_active_duties(),
            core.restart_active_duties(),
            core.start_active_duties(),
            core.restart_active_duties(),
        )
        assert running("replication-feed") == 1
        assert running("token-expiration") == 1

        await core.stop_active_duties()
        assert running("replication-feed") == 0
        assert running("token-expiration") == 0
    finally:
        await core.seal()


async def test_a_ring_begins_after_entries_applied_while_no_ring_existed(tmp_path: Path) -> None:
    """Nobody shipped them, so no secondary may resume past them: it must sync."""
    core = Core(FileBackend(tmp_path))
    await core.dev_bootstrap()
    try:
        replication = core.replication
        await replication.stop_active()
        replication.observe(ChangeSet(90, ("logical/x/k",)))
        await replication.start_active(applied=80)
        live = replication.live()
        assert live is not None
        assert live.ring.start == live.ring.last == 90
        assert not live.ring.can_resume(85)
        assert live.ring.can_resume(90)
    finally:
        await core.seal()


async def test_a_seal_during_a_restart_leaves_no_duty_running(tmp_path: Path) -> None:
    """The restart either finishes before the seal stops everything, or finds the
    node sealed and starts nothing: no feed or timer outlives the seal."""
    core = Core(FileBackend(tmp_path))
    await core.dev_bootstrap()
    await core.start_active_duties()
    await asyncio.gather(core.restart_active_duties(), core.seal(), core.restart_active_duties())
    assert core.sealed
    assert running("replication-feed") == 0
    assert running("token-expiration") == 0
