"""What one replicated write costs in messages (issue 16): counted, not timed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from consensus import RaftBackend, RaftConfig
from consensus.pki import node_tls
from harness.ports import free_port
from tests.unit.consensus.probes import DrainCounter

#: Heartbeats every 200 ms, so the delayed commit index waits 20 ms for the next
#: write's append: far longer than one write takes in process, even on a busy host.
SLOW_HEARTBEATS = {
    "heartbeat_interval": 0.2,
    "election_timeout_min": 1.0,
    "election_timeout_max": 2.0,
    "connection_timeout": 4.0,
    "leader_step_down_timeout": 2.0,
    "ping_interval": 0.0,
}


@contextlib.asynccontextmanager
async def three_nodes(tmp_path: Path) -> AsyncIterator[list[RaftBackend]]:
    secret = os.urandom(32)
    addresses = {f"n{i}": f"127.0.0.1:{free_port()}" for i in range(3)}
    nodes: list[RaftBackend] = []
    try:
        for node_id, address in addresses.items():
            peers = {k: v for k, v in addresses.items() if k != node_id}
            config = RaftConfig(
                node_id, address, tmp_path / node_id, secret, peers=peers,
                tls=node_tls(secret, node_id, "127.0.0.1"), **SLOW_HEARTBEATS,
            )  # fmt: skip
            nodes.append(await RaftBackend.open(config))
        for node in nodes:
            await node.wait_for_leader(20)
        yield nodes
    finally:
        for node in nodes:
            await node.close()


def count_sends(backend: RaftBackend) -> Counter[str]:
    """Messages the node's transport sends, by type (our own transport instance)."""
    sent: Counter[str] = Counter()
    transport = backend._node._transport
    real_send = transport.send

    def send(node: Any, message: Any) -> bool:
        if isinstance(message, dict):
            sent[message.get("type", "?")] += 1
        return bool(real_send(node, message))

    transport.send = send  # type: ignore[method-assign]
    return sent


async def test_one_append_per_follower_and_write_carries_the_commit_index_along(
    tmp_path: Path,
) -> None:
    async with three_nodes(tmp_path) as nodes:
        leader = next(node for node in nodes if node.is_leader())
        await leader.put("warm", b"up")
        sent = count_sends(leader)
        writes = 60

        for n in range(writes):
            revision = await leader.put(f"k{n}", b"v")

        # Upstream sent every entry twice per follower: with the entry, then
        # again with the new commit index alone (4 appends per write here).
        assert sent["append_entries"] <= 1.5 * 2 * writes, sent
        for node in nodes:  # the last commit index still reaches the followers
            await node.wait_for_index(revision, 10)
            assert await node.get(f"k{writes - 1}") is not None


async def test_a_write_wakes_the_leaders_loop_once(tmp_path: Path) -> None:
    """The commit callback, the changes and the applied index share one drain."""
    async with three_nodes(tmp_path) as nodes:
        leader = next(node for node in nodes if node.is_leader())
        await leader.put("warm", b"up")
        counter = DrainCounter(leader._bridge)
        writes = 60
        for n in range(writes):
            await leader.put(f"k{n}", b"v")
        await asyncio.sleep(0.1)  # anything still posted for the last write

        # The applied index used to follow after the next poll: two drains a write.
        assert counter.drains <= 1.3 * writes, counter.drains


async def test_the_leader_sends_an_entry_before_writing_it(tmp_path: Path) -> None:
    """Strict durability: the leader's own write and sync follow its AppendEntries."""
    async with three_nodes(tmp_path) as nodes:
        leader = next(node for node in nodes if node.is_leader())
        await leader.put("warm", b"up")
        events: list[str] = []
        journal = leader._node._journal
        transport = leader._node._transport
        real_write, real_send = journal._write_unwritten, transport.send

        def write() -> None:
            events.append("write")
            real_write()

        def send(node: Any, message: Any) -> bool:
            if isinstance(message, dict) and message.get("entries"):
                events.append("send")
            return bool(real_send(node, message))

        journal._write_unwritten = write  # type: ignore[method-assign]
        transport.send = send  # type: ignore[method-assign]
        await leader.put("k", b"v")

        assert events[:3] == ["send", "send", "write"], events


async def test_tls_peers_send_no_fernet_tokens(tmp_path: Path) -> None:
    async with three_nodes(tmp_path) as nodes:
        await nodes[0].put("k", b"v")
        for node in nodes:
            assert node._node._obj.encryptor is None
        await asyncio.sleep(0)


class SocketCalls:
    """Counts, on one TLS socket, the reads that came back empty and the SO_ERROR probes."""

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.empty_reads = 0
        self.probes = 0
        real_recv, real_getsockopt = sock.recv, sock.getsockopt

        def recv(*args: Any) -> bytes:
            try:
                return real_recv(*args)
            except ssl.SSLWantReadError:
                self.empty_reads += 1
                raise

        def getsockopt(*args: Any) -> Any:
            self.probes += 1
            return real_getsockopt(*args)

        sock.recv = recv  # type: ignore[method-assign]
        sock.getsockopt = getsockopt  # type: ignore[method-assign]


async def test_an_open_link_reads_each_message_without_extra_system_calls(
    tmp_path: Path,
) -> None:
    """Each system call on the Raft thread lets the event loop's thread take the GIL
    (and hand it back). On an open connection upstream probed ``SO_ERROR`` twice per
    read and read on until ``EAGAIN``: three extra calls per message."""
    async with three_nodes(tmp_path) as nodes:
        leader = next(node for node in nodes if node.is_leader())
        await leader.put("warm", b"up")
        connections = leader._node._transport._connections
        calls = [SocketCalls(conn._TcpConnection__socket) for conn in connections.values()]
        writes = 40

        for n in range(writes):
            revision = await leader.put(f"k{n}", b"v")

        assert len(calls) == 2
        assert sum(c.probes for c in calls) == 0
        # Acks from both followers: at least one per write. Only a read that found a
        # frame cut by the TLS record or the socket buffer may end in EAGAIN.
        assert sum(c.empty_reads for c in calls) <= writes // 4, [c.empty_reads for c in calls]
        for node in nodes:  # and nothing was left unread
            await node.wait_for_index(revision, 10)
            assert await node.get(f"k{writes - 1}") is not None
