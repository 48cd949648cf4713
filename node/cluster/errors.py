"""Cluster errors, with the statuses the reference uses for them."""

from __future__ import annotations

from node.errors import CofferError

__all__ = ["ClusterUnavailableError", "NoActiveNodeError", "RemovedError", "TooManyJoinsError"]


class ClusterUnavailableError(CofferError):
    """The cluster cannot do this right now (no leader, a peer unreachable)."""

    status = 503


class NoActiveNodeError(ClusterUnavailableError):
    def __init__(self) -> None:
        super().__init__("no active node")


class RemovedError(CofferError):
    """This node was removed from its cluster and no longer serves."""

    status = 503

    def __init__(self) -> None:
        super().__init__("this node was removed from the raft cluster")


class TooManyJoinsError(CofferError):
    """The leader holds as many join challenges as it allows (for this source, or
    at all); they expire, so the joiner retries."""

    status = 429
