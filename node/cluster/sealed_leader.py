"""A sealed node that kept its Raft hands leadership to a peer.

An unseal that fails after the replica opened (a DR secondary's first node,
whose cluster record needs a quorum: ``Core._finish_unseal``) leaves the node
sealed with its Raft up, so it still counts toward the quorum the next
attempt needs. But it can win an election, and a sealed leader is no active
node: the unsealed peers forward to it and get 503 until someone unseals it.
While the node stays so, this guard asks Raft to hand leadership to the most
caught-up connected peer once it has led for :data:`HOLD` seconds. The hold
keeps two sealed nodes from passing leadership back and forth faster than an
unsealing peer can use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from node.cluster.ports import Replica, TransfersLeadership
from sdk.errors import CofferError

__all__ = ["HOLD", "SealedLeaderGuard"]

log = logging.getLogger("coffer.cluster")

#: How long a sealed node may lead before it hands leadership on.
HOLD = 2.0
_CHECK_EVERY = 0.25


class SealedLeaderGuard:
    """Runs while the node is sealed with its replica kept open (start/stop)."""

    def __init__(
        self,
        replica: Callable[[], Replica | None],
        hold: float = HOLD,
        check_every: float = _CHECK_EVERY,
    ) -> None:
        self._replica = replica
        self._hold = hold
        self._check_every = check_every
        self._task: asyncio.Task[None] | None = None
        #: Leadership transfers asked for since the guard started.
        self.handed_over = 0

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="cluster-sealed-leader")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        leading_since: float | None = None
        while True:
            await asyncio.sleep(self._check_every)
            replica = self._replica()
            if replica is None or not replica.is_leader():
                leading_since = None
                continue
            now = time.monotonic()
            if leading_since is None:
                leading_since = now
            connected = replica.link_view()[0]
            if now - leading_since < self._hold or not connected:
                continue
            if not isinstance(replica, TransfersLeadership):
                return  # a replica that cannot hand over: nothing to do for good
            log.warning(
                "sealed but Raft leader: handing leadership to a peer",
                extra={"event": "cluster.sealed_leader_steps_down"},
            )
            self.handed_over += 1
            leading_since = None
            with contextlib.suppress(CofferError):  # no caught-up peer yet: next round
                await replica.transfer_leadership()
