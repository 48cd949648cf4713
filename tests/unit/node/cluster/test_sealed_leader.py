"""A node sealed after a failed unseal, with its Raft kept, hands leadership on.

The replica is a stand-in with the three calls the guard makes; the guard's
place in the lifecycle (started by ``on_seal(keep_raft=True)``, stopped by an
unseal attempt, a full seal or close) runs for real in the DR bring-up test
(``tests/replication/test_replication_dr_unseal.py``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from node.cluster.sealed_leader import SealedLeaderGuard
from sdk.errors import StorageError

HOLD, CHECK = 0.05, 0.01


class Replica:
    def __init__(self, *, leader: bool, peers: frozenset[str], refusals: int = 0) -> None:
        self.leader = leader
        self.peers = peers
        self.refusals = refusals
        self.transfers = 0

    def is_leader(self) -> bool:
        return self.leader

    def link_view(self) -> tuple[frozenset[str], str | None, int, int]:
        return self.peers, None, 0, 0

    async def transfer_leadership(self) -> None:
        self.transfers += 1
        if self.refusals:
            self.refusals -= 1
            raise StorageError("raft leadership transfer refused (REQUEST_DENIED)")
        self.leader = False


async def _run(replica: Any, seconds: float, hold: float = HOLD) -> SealedLeaderGuard:
    guard = SealedLeaderGuard(lambda: replica, hold=hold, check_every=CHECK)
    guard.start()
    try:
        await asyncio.sleep(seconds)
    finally:
        await guard.stop()
    return guard


async def test_a_sealed_leader_with_a_connected_peer_hands_leadership_on() -> None:
    replica = Replica(leader=True, peers=frozenset({"127.0.0.2:8201"}))
    guard = await _run(replica, HOLD * 6)
    assert replica.transfers == 1 and not replica.leader
    assert guard.handed_over == 1


async def test_it_waits_for_the_hold_before_handing_on() -> None:
    replica = Replica(leader=True, peers=frozenset({"127.0.0.2:8201"}))
    await _run(replica, HOLD * 6, hold=60.0)  # checked many times, never held long enough
    assert replica.transfers == 0 and replica.leader


async def test_a_lone_leader_or_a_follower_is_left_alone() -> None:
    lone = Replica(leader=True, peers=frozenset())
    follower = Replica(leader=False, peers=frozenset({"127.0.0.2:8201"}))
    await asyncio.gather(_run(lone, HOLD * 6), _run(follower, HOLD * 6))
    assert lone.transfers == 0 and lone.leader
    assert follower.transfers == 0


async def test_a_refused_transfer_is_asked_again_after_another_hold() -> None:
    replica = Replica(leader=True, peers=frozenset({"127.0.0.2:8201"}), refusals=1)
    await _run(replica, HOLD * 10)
    assert replica.transfers == 2 and not replica.leader


async def test_a_stopped_guard_asks_nothing() -> None:
    replica = Replica(leader=True, peers=frozenset({"127.0.0.2:8201"}))
    guard = SealedLeaderGuard(lambda: replica, hold=HOLD, check_every=CHECK)
    guard.start()
    assert guard.running
    await guard.stop()
    assert not guard.running
    await asyncio.sleep(HOLD * 4)
    assert replica.transfers == 0


async def test_no_replica_means_nothing_to_do() -> None:
    guard = SealedLeaderGuard(lambda: None, hold=HOLD, check_every=CHECK)
    guard.start()
    await asyncio.sleep(HOLD * 3)
    assert guard.handed_over == 0
    await guard.stop()
