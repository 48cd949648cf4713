"""What the cluster needs from ``consensus`` and from the core, as protocols.

``node`` must not import pysyncobj, so the replica and the code that opens it
are described here and implemented by ``consensus.driver``; the server wires
the two together.

The core sits above the cluster (it calls the cluster at init, unseal and
seal), so the cluster sees it only through :class:`HostCore`, which
``node.core.core.Core`` implements structurally, and gets its cache
invalidation (:class:`Invalidation`) handed in by whoever builds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from node.outbound import HttpClient
from sdk.certs import RaftTLS
from sdk.physical import AppliedChanges, Entry, TxnOp
from sdk.timings import RaftTimings

__all__ = [
    "HostCore",
    "Invalidation",
    "LocalView",
    "Member",
    "RaftDriver",
    "Replica",
    "TransfersLeadership",
]


class Member(Protocol):
    @property
    def node_id(self) -> str: ...

    @property
    def address(self) -> str: ...

    @property
    def leader(self) -> bool: ...

    @property
    def voter(self) -> bool: ...


class LocalView(Protocol):
    """The key space as this node's files hold it, read without networking."""

    def get(self, key: str) -> tuple[bytes, int] | None: ...

    def list(self, prefix: str) -> list[str]: ...


@runtime_checkable
class TransfersLeadership(Protocol):
    """A replica that can hand Raft leadership to a caught-up follower
    (``consensus.RaftBackend``: ``sys/step-down``, and a sealed leader)."""

    async def transfer_leadership(self) -> None: ...


class Replica(Protocol):
    """A running Raft replica (``consensus.RaftBackend``)."""

    async def get(self, key: str) -> Entry | None:
        """As ``PhysicalBackend.get``: an invalid key is refused (``validate_key``)."""
        ...

    async def list(self, prefix: str) -> list[str]: ...

    async def put(self, key: str, value: bytes) -> int: ...

    async def delete(self, key: str) -> None: ...

    async def commit(self, ops: Sequence[TxnOp]) -> int: ...

    async def close(self) -> None: ...

    def applied_index(self) -> int: ...

    def committed_index(self) -> int: ...

    #: (connected peers' addresses, leader's address, Raft commit index, Raft applied index).
    def link_view(self) -> tuple[frozenset[str], str | None, int, int]: ...

    async def wait_for_index(self, index: int, timeout: float) -> None: ...

    def is_leader(self) -> bool: ...

    #: Leader, and a majority acknowledged it within the lease (consensus/DESIGN.md).
    def has_lease(self) -> bool: ...

    def leader(self) -> Member | None: ...

    def configuration(self) -> Sequence[Member]: ...

    def status(self) -> dict[str, Any]: ...

    #: Commit and fsync latencies and batching since the replica started (``sys/metrics``).
    def timings(self) -> RaftTimings: ...

    def subscribe(self, callback: Callable[[AppliedChanges], None]) -> Callable[[], None]: ...

    def reload_tls(self, tls: RaftTLS) -> None:
        """Present a rotated certificate from the next Raft handshake on."""
        ...

    async def add_peer(self, node_id: str, address: str) -> None: ...

    async def remove_peer(self, node_id: str) -> None: ...

    async def export_snapshot(self) -> bytes: ...

    async def restore_snapshot(self, data: bytes) -> int: ...


class RaftDriver(Protocol):
    """Opens this node's replica; knows its data directory and addresses."""

    @property
    def node_id(self) -> str: ...

    @property
    def cluster_addr(self) -> str: ...

    @property
    def data_dir(self) -> Path: ...

    def has_data(self) -> bool: ...

    def was_removed(self) -> bool: ...

    def mark_removed(self) -> None: ...

    def discard(self) -> None:
        """Delete the replica's files (a join that failed part-way)."""
        ...

    async def read_local(self) -> LocalView: ...

    async def open(
        self, secret: bytes, peers: dict[str, str] | None = None, tls: RaftTLS | None = None
    ) -> Replica:
        """Start the replica; ``peers`` are stored as the founding peers on first use.

        ``tls`` is this node's certificate from the cluster CA; None: one from
        the CA derived from ``secret`` (clusters from before the stored CA).
        """
        ...


class HostCore(Protocol):
    """The core this node's cluster serves (``node.core.core.Core``): what the
    cluster reads of its state, and what it asks it to do when the role changes."""

    @property
    def sealed(self) -> bool:
        """Sealed to clients (also while unseal is still loading mounts)."""
        ...

    @property
    def cluster_id(self) -> str:
        """The stored cluster id ("" while sealed); binds signed index states."""
        ...

    @property
    def http_client(self) -> HttpClient | None:
        """Outgoing HTTP when the server gave the cluster no client of its own."""
        ...

    async def initialized(self) -> bool: ...

    def forget_seal_config(self) -> None:
        """Read the seal config from storage again: an abandoned join took the one
        the core had read (the leader's, from the join's overlay) out of storage."""
        ...

    async def seal(self) -> None:
        """Seal this node (it was removed from the configuration)."""
        ...

    async def start_active_duties(self) -> None:
        """This node became the active node: run what only the active node runs
        (lease expiry); a failed step is retried at the next activation."""
        ...

    async def stop_active_duties(self) -> None:
        """This node is no longer the active node (or is sealing)."""
        ...


class Invalidation(Protocol):
    """Keeps this node's caches in step with the entries its replica applies
    (``node.cluster.invalidation.Invalidator``)."""

    def start(self, applied: int) -> None:
        """Begin processing reports; everything up to ``applied`` is already read."""
        ...

    async def stop(self) -> None: ...

    def on_changes(self, changes: AppliedChanges) -> None:
        """The replica applied ``changes`` (called on the event loop)."""
        ...

    async def settled(self, index: int, timeout: float) -> None:
        """Wait until every change up to ``index`` has been processed."""
        ...
