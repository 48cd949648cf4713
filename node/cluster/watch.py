"""The unsealed node's background duties, driven by its Raft role.

* Becoming active (unsealed leader) starts the core's active duties (the
  token expiration manager); losing leadership or sealing stops them, so
  only one node revokes on time.
* The node's registry record is published (retried until a quorum takes it).
* A standby keeps what ``staleness`` needs: when it last knew a connected
  leader, and the highest commit index it has learned (its own, and the
  active node's from ``sys/leader``, polled twice a second; every peer's
  while no leader is known), so requests can
  tell whether its replica is fresh enough to read from.
* A node that has been out of touch with a leader for a while asks its peers, with a signed
  question, whether it is still a member; pysyncobj never tells a removed
  node, and the others refuse its connections, so this is how it learns it
  was removed (it then seals itself for good).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from node.cluster.staleness import LEADER_LOST, stale_reason
from node.outbound import HttpClient, OutboundError
from sdk.errors import CofferError

if TYPE_CHECKING:
    from node.cluster.cluster import Cluster

__all__ = ["Watcher"]

log = logging.getLogger("coffer.cluster")

_TICK = 0.05
_LEADERLESS_BEFORE_ASKING = 2.0
_ASK_EVERY = 1.0
_PUBLISH_RETRY = 1.0
_POLL_LEADER_EVERY = 0.5
_POLL_LEADER_TIMEOUT = 1.0


class Watcher:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.active = False
        self.active_since = 0.0
        #: Set once this replica has applied a write made after it came up, so a
        #: restarted standby never serves its pre-crash state as current.
        self.caught_up = False
        #: Peer cluster address -> when (monotonic) it was last seen connected.
        self.last_seen: dict[str, float] = {}
        #: When (monotonic) this node last knew a leader it is connected to.
        self.leader_contact = time.monotonic()
        #: The highest Raft commit index learned (own or the active node's).
        self.leader_commit = 0
        #: Why a standby must not serve local reads now ("" when it may).
        self.stale = ""
        self._task: asyncio.Task[None] | None = None
        self._side: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="cluster-watch")

    async def stop(self) -> None:
        task, self._task = self._task, None
        current = asyncio.current_task()
        tasks = [t for t in (task, *self._side) if t is not None and t is not current]
        for pending in tasks:
            pending.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._side.clear()
        self.caught_up = False
        self.leader_commit = 0
        self.stale = ""
        await self._set_active(False)

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coroutine, name=name)
        self._side.add(task)
        task.add_done_callback(self._side.discard)

    async def _run(self) -> None:
        cluster = self._cluster
        leaderless_since: float | None = None
        next_ask = 0.0
        self._spawn(self._publish(), "cluster-publish")
        self._spawn(self._catch_up(), "cluster-catch-up")
        self._spawn(self._poll_leader(), "cluster-poll-leader")
        self.leader_contact = last_tick = time.monotonic()
        while True:
            await asyncio.sleep(_TICK)
            now = time.monotonic()
            paused, last_tick = now - last_tick, now
            if paused > cluster.settings.staleness.max_leader_loss:
                self._resumed(paused)
            replica = cluster.storage.replica
            if replica is None:
                continue
            await self._set_active(not cluster.core.sealed and replica.is_leader())
            now = time.monotonic()
            # The cheap part of the replica's status (the tick runs 20 times a second).
            connected, leader, commit, applied = replica.link_view()
            for address in connected:
                self.last_seen[address] = now
            leading = replica.is_leader()
            # pysyncobj starts no election while connected to nobody, so a removed
            # node may keep its old leader forever: "in touch" needs the link too.
            in_touch = leader is not None and (leading or leader in connected)
            self._observe(now, in_touch, leading, commit, applied)
            if in_touch:
                leaderless_since = None
                continue
            leaderless_since = leaderless_since or now
            if now - leaderless_since >= _LEADERLESS_BEFORE_ASKING and now >= next_ask:
                next_ask = now + _ASK_EVERY
                if not any(t.get_name() == "cluster-ask" for t in self._side):
                    self._spawn(self._ask_membership(), "cluster-ask")

    def _observe(self, now: float, in_touch: bool, leader: bool, commit: int, applied: int) -> None:
        """Refresh :attr:`stale` from this tick's view of the leader and the replica."""
        if in_touch:
            self.leader_contact = now
        self.leader_commit = max(self.leader_commit, commit)
        if leader:
            self.stale = ""
            return
        self.stale = stale_reason(
            self._cluster.settings.staleness,
            leader_lost_for=now - self.leader_contact,
            leader_commit=self.leader_commit,
            applied=applied,
        )
        if self.stale.startswith(LEADER_LOST) and self.caught_up:
            # Once back in touch the replica may still be far behind, by more time
            # than the lag bound (counted in entries) shows: local reads wait again
            # for a marker write made after the loss to be applied here.
            self.caught_up = False
            self._spawn(self._catch_up(), "cluster-catch-up")

    def _resumed(self, paused: float) -> None:
        """This loop did not run for ``paused`` seconds (the process was frozen, or
        starved): whatever it last saw of the leader proves nothing about now, and
        the replica may be that far behind though the leader is in touch again at
        once. Local reads wait for a marker write made after the pause, as after
        a leader loss (requests answered before this tick see the stale contact
        time: ``node.cluster.staleness.stale_now``)."""
        log.warning(
            "this node did not run for %.1fs; local reads wait until it has caught up",
            paused,
            extra={"event": "cluster.resumed", "paused_seconds": round(paused, 1)},
        )
        if self.caught_up:
            self.caught_up = False
            self._spawn(self._catch_up(), "cluster-catch-up")

    async def _poll_leader(self) -> None:
        """Learn how far the cluster has committed: a follower that needs a
        snapshot, or is cut off, cannot see it in its own log.

        Asks the active node's ``sys/leader``; with no leader known, every
        peer's (any node's commit index is a lower bound of the cluster's, so
        the highest answer is safe to compare with).
        """
        cluster = self._cluster
        while True:
            await asyncio.sleep(_POLL_LEADER_EVERY)
            replica = cluster.replica
            http = cluster.outgoing_http()
            if replica is None or replica.is_leader() or cluster.core.sealed or http is None:
                continue
            state = await cluster.state()
            targets = [state.leader_api_addr] if state.leader_api_addr else []
            if not targets:
                with contextlib.suppress(CofferError):
                    targets = [
                        r.api_addr
                        for r in await cluster.registry.all()
                        if r.node_id != cluster.settings.node_id and r.api_addr
                    ]
            indexes = await asyncio.gather(*(self._commit_of(http, t) for t in targets))
            self.leader_commit = max([self.leader_commit, *indexes])

    @staticmethod
    async def _commit_of(http: HttpClient, api_addr: str) -> int:
        url = api_addr.rstrip("/") + "/v1/sys/leader"
        try:
            reply = await http.request("GET", url, timeout=_POLL_LEADER_TIMEOUT)
            doc = json.loads(reply.body) if reply.status == 200 else {}
        except (OutboundError, ValueError):
            return 0
        index = doc.get("raft_committed_index") if isinstance(doc, dict) else None
        return index if isinstance(index, int) else 0

    async def _set_active(self, active: bool) -> None:
        if active == self.active:
            return
        self.active = active
        core = self._cluster.core
        if active:
            self.active_since = time.time()
            replica = self._cluster.storage.replica
            if replica is not None:
                with contextlib.suppress(CofferError):
                    await replica.wait_for_index(replica.committed_index(), 5.0)
            await core.start_active_duties()
            log.info("became the active node", extra={"event": "cluster.active"})
        else:
            self.active_since = 0.0
            await core.stop_active_duties()
            log.info("no longer the active node", extra={"event": "cluster.standby"})

    async def _publish(self) -> None:
        while True:
            try:
                await self._cluster.publish_self()
                return
            except CofferError as exc:
                log.warning(
                    "cannot publish this node's address yet",
                    extra={"event": "cluster.publish_failed", "error": str(exc)},
                )
            await asyncio.sleep(_PUBLISH_RETRY)

    async def _catch_up(self) -> None:
        """Commit a marker through the leader and wait to apply it locally."""
        while True:
            try:
                await self._cluster.sync_point()
                self.caught_up = True
                return
            except CofferError as exc:
                log.warning(
                    "not caught up with the cluster yet",
                    extra={"event": "cluster.catch_up_failed", "error": str(exc)},
                )
            await asyncio.sleep(_PUBLISH_RETRY)

    async def _ask_membership(self) -> None:
        if await self._cluster.peers_say_removed():
            log.warning(
                "removed from the raft cluster; sealing", extra={"event": "cluster.removed"}
            )
            self._cluster.schedule_removal()
