"""What the active node holds while replication runs: the WAL ring, the links, status."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from node.replication.classify import Kind
from node.replication.ports import Listening
from node.replication.wal import WalRing
from sdk.physical import PhysicalBackend

__all__ = ["ClientStatus", "Live", "SecondaryLink", "walk"]


@dataclass
class SecondaryLink:
    """What the primary knows of one connected secondary (status)."""

    secondary_id: str
    kind: Kind
    connection_status: str = "connected"
    last_heartbeat: float = 0.0
    acked: int = 0
    state: str = "stream-wals"
    #: set when a filter changed: the next loop of the session syncs
    resync: bool = False


@dataclass
class ClientStatus:
    state: str = "idle"
    connection_state: str = "disconnected"
    last_remote_wal: int = 0
    last_heartbeat: float = 0.0
    merkle_root: str = ""
    error: str = ""
    sync_progress: int = 0
    sync_total_keys: int = 0


@dataclass
class Live:
    ring: WalRing
    feed: asyncio.Queue[tuple[int, tuple[str, ...], bool]] = field(default_factory=asyncio.Queue)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    listening: dict[Kind, Listening] = field(default_factory=dict)
    links: dict[str, SecondaryLink] = field(default_factory=dict)
    client: ClientStatus = field(default_factory=ClientStatus)


async def walk(physical: PhysicalBackend, prefix: str) -> list[str]:
    """Every key under ``prefix`` (``list`` gives immediate children)."""
    out: list[str] = []
    pending = [prefix]
    while pending:
        current = pending.pop()
        for child in await physical.list(current):
            if child.endswith("/"):
                pending.append(current + child)
            else:
                out.append(current + child)
    return sorted(out)
