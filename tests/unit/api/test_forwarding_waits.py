"""How long a standby's relaying waits: for a replaced active node, and for the
replica to apply a relayed write (``api.forwarding``), without a cluster."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from api.forwarding import _unless_replaced
from node.cluster.role import HAState
from node.cluster.staleness import StalenessBounds

if TYPE_CHECKING:
    from node.cluster.cluster import Cluster as ClusterType

OLD = HAState(ha_enabled=True, sealed=False, performance_standby=True, leader_api_addr="http://a")


@dataclass
class _Settings:
    staleness: StalenessBounds = field(default_factory=StalenessBounds)


@dataclass
class _Cluster:
    """A standby whose view of the active node the test changes."""

    now: HAState = OLD
    settings: _Settings = field(default_factory=_Settings)
    asked: int = 0

    async def state(self) -> HAState:
        self.asked += 1
        return self.now


def _cluster(fake: _Cluster) -> ClusterType:
    return cast("ClusterType", fake)


async def test_a_request_held_by_a_replaced_active_node_is_abandoned() -> None:
    fake = _Cluster()
    held = asyncio.Event()
    cancelled = asyncio.Event()

    async def send() -> str:
        held.set()
        try:
            await asyncio.sleep(60)  # the frozen node never answers
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "answered"

    waiting = asyncio.create_task(_unless_replaced(send(), _cluster(fake), OLD))
    await held.wait()
    await asyncio.sleep(0.25)
    assert not waiting.done()  # same active node: it keeps waiting
    new = HAState(ha_enabled=True, sealed=False, leader_api_addr="http://b")
    fake.now = new
    assert await asyncio.wait_for(waiting, 1) == new
    assert cancelled.is_set()


async def test_an_answer_is_returned_as_is() -> None:
    async def send() -> str:
        return "answered"

    assert await _unless_replaced(send(), _cluster(_Cluster()), OLD) == "answered"


async def test_no_known_active_node_is_not_a_replacement() -> None:
    fake = _Cluster(now=HAState(ha_enabled=True, sealed=False))  # an election under way

    async def send() -> str:
        await asyncio.sleep(0.35)
        return "answered"

    assert await _unless_replaced(send(), _cluster(fake), OLD) == "answered"
    assert fake.asked >= 2
