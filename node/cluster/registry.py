"""Where each node serves: ``{node_id, api_addr, cluster_addr}`` in replicated storage.

Raft only knows peers by their cluster address; standbys need the active
node's *API* address to forward or redirect a client, and ``sys/leader``
reports it. Each node publishes its own record after it unseals, as a
plaintext physical key (addresses are not secret, and a sealed node can read
it from its replica's files).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from sdk.physical import PhysicalBackend

__all__ = ["NODES_PREFIX", "NodeRecord", "Registry"]

NODES_PREFIX = "core/raft/nodes/"


@dataclass(frozen=True, slots=True)
class NodeRecord:
    node_id: str
    api_addr: str
    cluster_addr: str

    def encode(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def decode(cls, raw: bytes) -> NodeRecord | None:
        try:
            body = json.loads(raw)
            return cls(str(body["node_id"]), str(body["api_addr"]), str(body["cluster_addr"]))
        except (ValueError, KeyError, TypeError):
            return None


class Registry:
    def __init__(self, physical: PhysicalBackend) -> None:
        self._physical = physical

    async def publish(self, record: NodeRecord) -> None:
        """Write this node's record unless the stored one already says the same."""
        key = NODES_PREFIX + record.node_id
        current = await self._physical.get(key)
        if current is None or NodeRecord.decode(current.value) != record:
            await self._physical.put(key, record.encode())

    async def forget(self, node_id: str) -> None:
        await self._physical.delete(NODES_PREFIX + node_id)

    async def get(self, node_id: str) -> NodeRecord | None:
        found = await self._physical.get(NODES_PREFIX + node_id)
        return NodeRecord.decode(found.value) if found else None

    async def all(self) -> list[NodeRecord]:
        records = []
        for name in await self._physical.list(NODES_PREFIX):
            if not name.endswith("/") and (record := await self.get(name)) is not None:
                records.append(record)
        return records
