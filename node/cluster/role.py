"""A node's HA role, derived from its Raft role and seal state, in one place.

| Raft role, seal state | HA role | ``sys/health`` |
|---|---|---|
| leader holding its lease, unsealed | active | 200 |
| leader without its lease (cut off), unsealed | standby, no active node | 429 |
| follower (voter), unsealed, performance standbys on (default) | performance standby | 473 |
| follower (voter), unsealed, ``disable_performance_standby = true`` | standby | 429 |
| any, sealed | sealed | 503 |
| removed from the configuration | removed (sealed for good) | 530 (``removedcode``) |
| standby, no leader for ``standby_read_max_leader_loss`` | (standby) | 474 |

pysyncobj has no non-voting members, so every follower is a voter; the
mapping keeps the column so a non-voter role can slot in later.
"""

from __future__ import annotations

from dataclasses import dataclass

from node.cluster.staleness import LEADER_LOST

__all__ = ["HAState", "derive_role"]


@dataclass(frozen=True, slots=True)
class HAState:
    """What ``sys/health``, ``sys/leader`` and forwarding need to know."""

    ha_enabled: bool
    sealed: bool
    active: bool = False
    performance_standby: bool = False
    removed: bool = False
    leader_id: str = ""
    #: The active node's ``api_addr`` ("" while unknown).
    leader_api_addr: str = ""
    leader_cluster_addr: str = ""
    active_time: float = 0.0
    committed_index: int = 0
    applied_index: int = 0
    #: A standby has applied a write committed after it came up (see ``Watcher``).
    caught_up: bool = True
    #: Why a standby must not serve reads from its replica now ("" when it may;
    #: ``node.cluster.staleness``).
    stale: str = ""
    #: Seconds since a standby last knew a connected leader (0 on the active node).
    leader_lost_for: float = 0.0

    @property
    def ha_healthy(self) -> bool:
        """False for a standby that lost the leader for longer than its bound (474)."""
        return not (self.standby and self.stale.startswith(LEADER_LOST))

    @property
    def standby(self) -> bool:
        """An unsealed node that is not active: it forwards (or serves reads)."""
        return self.ha_enabled and not self.sealed and not self.active


def derive_role(
    *,
    sealed: bool,
    is_leader: bool,
    voter: bool,
    performance_standbys: bool,
    has_lease: bool = True,
) -> tuple[bool, bool]:
    """(active, performance standby) for a node's Raft role and settings.

    A leader is active only while it holds its lease: cut off from its
    majority it may already have been replaced, so it serves neither reads
    nor writes (and no local reads as a standby either).
    """
    if sealed:
        return False, False
    if is_leader:
        return has_lease, False
    return False, performance_standbys and voter
