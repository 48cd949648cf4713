"""Opens one node's replica for the core (``node.cluster.ports.RaftDriver``).

The core never sees pysyncobj or :class:`RaftConfig`: it hands over the
cluster secret it derived from the root key, this node's TLS material (its
certificate from the cluster CA, ``node.cluster.tls_keyring``) and, when
joining, the peers the leader named. Timers scale with
``performance_multiplier`` as the reference's do (1 = the tuned LAN defaults).
Without material the node issues itself a certificate from the CA derived
from the secret, as before the stored CA (:func:`consensus.pki.node_tls`);
``overrides={"tls": None}`` turns TLS off.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consensus.backend import RaftBackend
from consensus.config import RaftConfig, RaftConfigError, parse_address
from consensus.local import (
    discard_raft_data,
    has_raft_data,
    load_founding_peers,
    mark_removed,
    read_local_state,
    store_founding_peers,
    was_removed,
)
from consensus.pki import node_tls
from consensus.state import KVState
from sdk.certs import RaftTLS
from sdk.errors import StorageError

__all__ = ["ConsensusDriver"]

_SCALED = (
    "heartbeat_interval",
    "election_timeout_min",
    "election_timeout_max",
    "connection_timeout",
    "leader_step_down_timeout",
)


@dataclass
class ConsensusDriver:
    node_id: str
    cluster_addr: str
    data_dir: Path
    performance_multiplier: int = 1
    overrides: dict[str, Any] = field(default_factory=dict)

    def has_data(self) -> bool:
        return has_raft_data(self.data_dir)

    def was_removed(self) -> bool:
        return was_removed(self.data_dir)

    def mark_removed(self) -> None:
        mark_removed(self.data_dir)

    def discard(self) -> None:
        discard_raft_data(self.data_dir)

    async def read_local(self) -> KVState:
        return await asyncio.to_thread(read_local_state, self.data_dir)

    def _config(self, secret: bytes, peers: dict[str, str], tls: RaftTLS | None) -> RaftConfig:
        if tls is None:
            host = parse_address(self.cluster_addr, "cluster_addr")[0]
            tls = node_tls(secret, self.node_id, host)
        config = RaftConfig(
            node_id=self.node_id,
            cluster_addr=self.cluster_addr,
            data_dir=self.data_dir,
            cluster_secret=secret,
            peers=peers,
            tls=tls,
        )
        multiplier = max(self.performance_multiplier, 1)
        scaled = {name: getattr(config, name) * multiplier for name in _SCALED}
        return dataclasses.replace(config, **{**scaled, **self.overrides})

    async def open(
        self, secret: bytes, peers: dict[str, str] | None = None, tls: RaftTLS | None = None
    ) -> RaftBackend:
        if peers is not None and not await asyncio.to_thread(self.has_data):
            await asyncio.to_thread(store_founding_peers, self.data_dir, peers)
        founding = await asyncio.to_thread(load_founding_peers, self.data_dir)
        try:
            config = self._config(secret, founding, tls)
        except RaftConfigError as exc:
            raise StorageError(f"invalid raft settings: {exc}") from exc
        return await RaftBackend.open(config)
