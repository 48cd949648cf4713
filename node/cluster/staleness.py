"""When a performance standby must stop serving reads from its own replica.

A standby's replica is only as fresh as its link to the leader. Two bounds,
both in the ``storage "raft"`` stanza (docs/clustering.md):

* ``standby_read_max_leader_loss`` (default 1 s): the standby has known no
  leader it is connected to for longer than this. It notices the loss when
  its election timer fires (250-600 ms times ``performance_multiplier``
  after the last heartbeat), so the bound counts from then.
* ``standby_read_max_lag`` (default 1000 entries, the reference's
  ``max_trailing_logs``): the leader's commit index, as last learned, is
  more than this many Raft entries ahead of what this replica applied
  (learned from its own log and the peers' ``sys/leader``; see ``watch``).

Past either bound the standby forwards its reads to the active node, or
answers 503 "not caught up" when there is none to forward to. The decision
is a pure function so it can be tested without a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_LAG",
    "DEFAULT_MAX_LEADER_LOSS",
    "LEADER_LOST",
    "StalenessBounds",
    "stale_now",
    "stale_reason",
]

DEFAULT_MAX_LEADER_LOSS = 1.0
DEFAULT_MAX_LAG = 1000
#: How a reason for lost contact starts (``sys/health`` reports it as 474).
LEADER_LOST = "no contact with the active node"


@dataclass(frozen=True, slots=True)
class StalenessBounds:
    max_leader_loss: float = DEFAULT_MAX_LEADER_LOSS
    max_lag: int = DEFAULT_MAX_LAG


def stale_reason(
    bounds: StalenessBounds, *, leader_lost_for: float, leader_commit: int, applied: int
) -> str:
    """Why this standby must not serve local reads now ("" when it may).

    ``leader_lost_for`` is seconds since it last knew a connected leader (0
    while it does); ``leader_commit`` the highest commit index it has learned
    (a lower bound of the leader's); ``applied`` the raw Raft index it applied.
    """
    lost = _leader_lost(bounds, leader_lost_for)
    if lost:
        return lost
    lag = leader_commit - applied
    if lag > bounds.max_lag:
        return f"{lag} entries behind the active node"
    return ""


def stale_now(bounds: StalenessBounds, *, ticked: str, leader_lost_for: float) -> str:
    """``ticked`` (the watcher's reason at its last tick), or the leader loss counted
    to this moment. The watcher ticks on the event loop; a process just resumed
    from a freeze (SIGSTOP) or starved answers before it ticks, and its last
    contact is long past then. Reads and ``sys/health`` both decide by this."""
    return ticked or _leader_lost(bounds, leader_lost_for)


def _leader_lost(bounds: StalenessBounds, leader_lost_for: float) -> str:
    if leader_lost_for > bounds.max_leader_loss:
        return f"{LEADER_LOST} for {leader_lost_for:.1f}s"
    return ""
