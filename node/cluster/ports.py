"""What the cluster needs from ``consensus``, as protocols.

``node`` must not import pysyncobj, so the replica and the code that opens it
are described here and implemented by ``consensus.driver``; the server wires
the two together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from node.cluster.certs import RaftTLS
from node.physical.base import Entry, TxnOp

__all__ = ["Changes", "LocalView", "Member", "RaftDriver", "Replica"]


class Changes(Protocol):
    """Keys changed by the entry at ``index``; ``reset`` means every key."""

    @property
    def index(self) -> int: ...

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def reset(self) -> bool: ...


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


class Replica(Protocol):
    """A running Raft replica (``consensus.RaftBackend``)."""

    async def get(self, key: str) -> Entry | None: ...

    async def list(self, prefix: str) -> list[str]: ...

    async def put(self, key: str, value: bytes) -> int: ...

    async def delete(self, key: str) -> None: ...

    async def commit(self, ops: Sequence[TxnOp]) -> int: ...

    async def close(self) -> None: ...

    def applied_index(self) -> int: ...

    def committed_index(self) -> int: ...

    async def wait_for_index(self, index: int, timeout: float) -> None: ...

    def is_leader(self) -> bool: ...

    #: Leader, and a majority acknowledged it within the lease (consensus/DESIGN.md).
    def has_lease(self) -> bool: ...

    def leader(self) -> Member | None: ...

    def configuration(self) -> Sequence[Member]: ...

    def status(self) -> dict[str, Any]: ...

    def subscribe(self, callback: Callable[[Changes], None]) -> Callable[[], None]: ...

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
