"""Who is in the cluster, by node id, and changing it one node at a time.

pysyncobj knows voters only by ``host:port``. Node ids live in the
replicated state (a ``MemberChange`` command per join), seeded by each node's
static ``peers`` setting, so every node reports the same id for an address.
Changes use the library's single-server membership change; it applies a
change when the leader appends it, so joins are one node at a time and the
new node must already be running with the cluster's addresses as its peers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from consensus.bridge import FAIL_NAMES, LoopBridge
from consensus.commands import Command, MemberChange, Result, new_command_id
from consensus.config import RaftConfigError, parse_address
from consensus.node import RaftNode
from sdk.errors import InvalidRequestError, StorageError

__all__ = ["Membership", "Server"]

_SUCCESS = 0
_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class Server:
    node_id: str
    address: str
    leader: bool
    #: pysyncobj has no non-voting members; read-only observers are not listed.
    voter: bool = True


class Membership:
    def __init__(
        self,
        node: RaftNode,
        bridge: LoopBridge,
        run_command: Callable[[Command], Awaitable[Result]],
    ) -> None:
        self._node = node
        self._bridge = bridge
        self._run_command = run_command

    def _ids_by_address(self) -> dict[str, str]:
        config = self._node.config
        ids = {address: node_id for node_id, address in config.peers.items()}
        ids[config.cluster_addr] = config.node_id
        ids.update({address: node_id for node_id, address in self._node.state.members().items()})
        return ids

    def address_of(self, node_id: str) -> str | None:
        for address, known in self._ids_by_address().items():
            if known == node_id and address in self._node.addresses():
                return address
        return None

    def configuration(self) -> list[Server]:
        ids = self._ids_by_address()
        leader = self._node.leader_address()
        return [
            Server(ids.get(address, address), address, address == leader)
            for address in self._node.addresses()
        ]

    def leader(self) -> Server | None:
        address = self._node.leader_address()
        if address is None:
            return None
        return Server(self._ids_by_address().get(address, address), address, True)

    async def add(self, node_id: str, address: str) -> None:
        try:
            parse_address(address, "address")
        except RaftConfigError as exc:
            raise InvalidRequestError(str(exc)) from exc
        known = self.address_of(node_id)
        if known is not None and known != address:
            raise InvalidRequestError(f"node id {node_id!r} is already used by {known}")
        await self._run_command(MemberChange(new_command_id(), node_id, address))
        await self._change(address, adding=True)

    async def remove(self, node_id: str) -> None:
        address = self.address_of(node_id)
        if address is None:
            raise InvalidRequestError(f"no raft peer with node id {node_id!r}")
        if address == self._node.config.cluster_addr:
            raise InvalidRequestError("a node cannot remove itself; remove it from another node")
        await self._change(address, adding=False)
        await self._run_command(MemberChange(new_command_id(), node_id, None))

    async def _change(self, address: str, *, adding: bool) -> None:
        reason = "not submitted"
        for attempt in range(_ATTEMPTS):
            if attempt:
                await asyncio.sleep(0.1 * attempt)
            if (address in self._node.addresses()) == adding and attempt:
                return  # an earlier attempt went through after all
            future, callback = self._bridge.callback()
            if adding:
                self._node.add_node(address, callback)
            else:
                self._node.remove_node(address, callback)
            try:
                async with asyncio.timeout(self._node.config.request_timeout):
                    _, error = await future
            except TimeoutError:
                reason = "timeout"
                continue
            if error == _SUCCESS:
                return
            # REQUEST_DENIED: another change or the leader's no-op is still
            # uncommitted, or the change is already in place (checked above).
            reason = FAIL_NAMES.get(error, str(error))
        raise StorageError(f"raft membership change for {address} failed ({reason})")
