"""``sys/storage/raft/*``: configuration, remove-peer, snapshots and autopilot state.

Served by the active node (standbys forward these paths, see
``api.forwarding``), root namespace only. The join and bootstrap endpoints
are unauthenticated HTTP routes in ``api.routes_sys``, not logical paths.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from node.cluster.errors import NoActiveNodeError
from node.framework import Field, FieldData, FieldType, Path
from node.logical.request import Operation, Request
from node.logical.response import Response
from node.version import VERSION
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from node.cluster.cluster import Cluster
    from node.core.core import Core

__all__ = ["SNAPSHOT_FIELD", "RaftPaths"]

#: Where the raw snapshot body travels in a restore request (set by ``api``).
SNAPSHOT_FIELD = "snapshot"
#: A voter this many entries behind the leader's commit index is unhealthy.
_MAX_TRAILING = 1000


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.3f}s"


class RaftPaths:
    def __init__(self, core: Core) -> None:
        self._core = core

    def paths(self) -> list[Path]:
        return [
            Path(
                "storage/raft/configuration",
                operations={Operation.READ: self._configuration},
                sudo=True,
                summary="The Raft configuration: every server, its address and role.",
            ),
            Path(
                "storage/raft/remove-peer",
                operations={Operation.UPDATE: self._remove_peer},
                fields={
                    "server_id": Field(FieldType.STRING, "Node id of the server to remove.", "")
                },
                sudo=True,
                summary="Remove a server from the Raft configuration.",
            ),
            Path(
                "storage/raft/snapshot(-force)?",
                operations={Operation.READ: self._snapshot, Operation.UPDATE: self._restore},
                fields={SNAPSHOT_FIELD: Field(FieldType.ANY, "The raw snapshot (request body).")},
                sudo=True,
                summary="Download a snapshot of the storage, or restore one (raw body).",
            ),
            Path(
                "storage/raft/autopilot/state",
                operations={Operation.READ: self._autopilot_state},
                summary="Health of every Raft server as the leader sees it.",
            ),
        ]

    def _cluster(self) -> Cluster:
        if self._core.cluster is None:
            raise InvalidRequestError("raft storage is not in use on this node")
        return self._core.cluster

    def _replica(self, cluster: Cluster | None = None) -> Any:
        replica = (self._cluster() if cluster is None else cluster).replica
        if replica is None or not replica.is_leader():
            raise NoActiveNodeError()
        return replica

    async def _configuration(self, request: Request, data: FieldData) -> Response:
        replica = self._replica()
        servers = [
            {
                "node_id": member.node_id,
                "address": member.address,
                "leader": member.leader,
                "protocol_version": "3",
                "voter": member.voter,
            }
            for member in replica.configuration()
        ]
        return Response(data={"config": {"index": replica.committed_index(), "servers": servers}})

    async def _remove_peer(self, request: Request, data: FieldData) -> None:
        server_id = data.get("server_id")
        if not server_id:
            raise InvalidRequestError("no server id provided")
        await self._cluster().remove_peer(server_id)

    async def _snapshot(self, request: Request, data: FieldData) -> Response:
        raw = await self._replica().export_snapshot()
        return Response(raw=raw, raw_content_type="application/octet-stream")

    async def _restore(self, request: Request, data: FieldData) -> None:
        body = request.data.get(SNAPSHOT_FIELD)
        if not isinstance(body, bytes) or not body:
            raise InvalidRequestError("the snapshot must be sent as the raw request body")
        await self._replica().restore_snapshot(body)

    async def _autopilot_state(self, request: Request, data: FieldData) -> Response:
        cluster = self._cluster()
        replica = self._replica(cluster)
        status = replica.status()
        servers = _servers(cluster, replica, status)
        voters = sorted(servers)
        healthy_count = sum(1 for s in servers.values() if s["healthy"])
        quorum = len(voters) // 2 + 1
        state = {
            "healthy": healthy_count == len(voters),
            "failure_tolerance": max(healthy_count - quorum, 0),
            "leader": next((s["id"] for s in servers.values() if s["status"] == "leader"), ""),
            "voters": voters,
            "non_voters": [],
            "servers": servers,
        }
        return Response(data=state)


def _servers(cluster: Cluster, replica: Any, status: dict[str, Any]) -> dict[str, Any]:
    """Autopilot's view of each server, by node id, as the leader sees it."""
    commit = replica.committed_index()
    peers = {peer["address"]: peer for peer in status.get("peers", [])}
    now = time.monotonic()
    servers: dict[str, Any] = {}
    for member in replica.configuration():
        peer = peers.get(member.address)
        contact: float | None
        if member.leader:
            alive, last_index, contact = True, replica.applied_index(), 0.0
        else:
            alive = bool(peer and peer.get("connected"))
            last_index = int((peer or {}).get("match_index") or 0)
            seen = cluster.watcher.last_seen.get(member.address)
            contact = None if seen is None else (0.0 if alive else now - seen)
        healthy = alive and commit - last_index <= _MAX_TRAILING
        servers[member.node_id] = {
            "id": member.node_id,
            "name": member.node_id,
            "address": member.address,
            "node_status": "alive" if alive else "left",
            "last_contact": _seconds(contact),
            "last_term": status.get("term", 0),
            "last_index": last_index,
            "healthy": healthy,
            "status": "leader" if member.leader else "voter",
            "version": VERSION,
            "meta": {},
        }
    return servers
