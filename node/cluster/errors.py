"""Cluster errors, with the statuses the reference uses for them."""

from __future__ import annotations

from sdk.errors import CofferError

__all__ = [
    "ClusterUnavailableError",
    "IndexNotReachedError",
    "NoActiveNodeError",
    "NotCaughtUpError",
    "PleaseForwardError",
    "RemovedError",
    "TooManyJoinsError",
]


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


class IndexNotReachedError(CofferError):
    """A request's ``X-Vault-Index`` is ahead of this replica (``X-Vault-Inconsistent: fail``).

    The reference answers 412 with this text; its Go client retries on it.
    """

    status = 412

    def __init__(self) -> None:
        super().__init__("required index state not present")


class NotCaughtUpError(ClusterUnavailableError):
    """A performance standby too stale to read from, with no active node to forward to."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"not caught up: {reason}")


class PleaseForwardError(ClusterUnavailableError):
    """A standby's request needs a write: the HTTP edge forwards it to the active node.

    Vault's ``ErrPerfStandbyPleaseForward``. Nothing was written here (the
    standby's storage refused it, see ``node.barrier.readonly``), so the active
    node runs the whole request. Where the edge cannot forward (a node-local
    endpoint) the client gets this 503 and retries on the active node.
    """

    def __init__(self) -> None:
        super().__init__("this request writes: it must be answered by the active node")


class TooManyJoinsError(CofferError):
    """The leader holds as many join challenges as it allows (for this source, or
    at all); they expire, so the joiner retries."""

    status = 429
