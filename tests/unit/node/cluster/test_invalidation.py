"""Entries applied by Raft reach the barrier's read cache through ``Invalidator.on_changes``.

A second barrier unsealed with the cluster's root key writes straight to the
node's storage, as an entry applied by the replica does; the node's barrier
only learns of it from the change report.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from consensus.state import ChangeSet
from node.barrier.barrier import Barrier
from node.cluster.invalidation import Invalidator
from node.core.core import Core
from node.physical.inmem import InmemBackend
from node.seal.keys import decode_key


@dataclass
class Node:
    core: Core
    elsewhere: Barrier  # "another node" writing to the same replicated storage
    invalidator: Invalidator


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    core = Core(InmemBackend())
    init = await core.dev_bootstrap()
    root_key = await core.lifecycle.seal.root_key_from_shares([decode_key(init.keys_hex[0])])
    elsewhere = Barrier(core.physical, disable_cache=True)
    await elsewhere.unseal(root_key)
    invalidator = Invalidator(core)
    try:
        yield Node(core, elsewhere, invalidator)
    finally:
        await invalidator.stop()
        await core.close()


async def read(core: Core, key: str) -> bytes | None:
    found = await core.barrier.get(key)
    return found.value if found else None


async def test_applied_keys_are_dropped_from_the_read_cache(node: Node) -> None:
    core = node.core
    node.invalidator.start(0)
    await core.barrier.put("logical/m/a", b"v1")
    await core.barrier.put("logical/m/b", b"v1")
    assert await read(core, "logical/m/a") == b"v1"
    assert await read(core, "logical/m/b") == b"v1"
    assert await read(core, "logical/m/new") is None

    index = await node.elsewhere.put("logical/m/a", b"v2")
    await node.elsewhere.put("logical/m/new", b"created")
    assert await read(core, "logical/m/a") == b"v1"  # not reported yet
    node.invalidator.on_changes(ChangeSet(index, ("logical/m/a", "logical/m/new")))

    assert await read(core, "logical/m/a") == b"v2"
    assert await read(core, "logical/m/new") == b"created"
    assert core.barrier.cache.lookup("logical/m/b") is not None  # untouched keys stay

    await node.elsewhere.delete("logical/m/a")
    node.invalidator.on_changes(ChangeSet(index + 2, ("logical/m/a",)))
    assert await read(core, "logical/m/a") is None


async def test_a_reset_drops_every_cached_value(node: Node) -> None:
    core = node.core
    node.invalidator.start(0)
    await core.barrier.put("logical/m/a", b"v1")
    assert await read(core, "logical/m/a") == b"v1"
    await node.elsewhere.put("logical/m/a", b"restored")
    node.invalidator.on_changes(ChangeSet(99, (), reset=True))
    assert await read(core, "logical/m/a") == b"restored"


async def test_reports_reach_the_cache_even_before_the_invalidator_runs(node: Node) -> None:
    """Between the barrier's unseal and ``start`` the core reads (mounts,
    policies) and the replica may apply entries: neither may leave stale values."""
    core = node.core
    await core.barrier.put("logical/m/a", b"v1")
    assert await read(core, "logical/m/a") == b"v1"
    index = await node.elsewhere.put("logical/m/a", b"v2")
    node.invalidator.on_changes(ChangeSet(index, ("logical/m/a",)))  # not started
    assert await read(core, "logical/m/a") == b"v2"

    await node.elsewhere.put("logical/m/a", b"v3")  # reported to nobody
    node.invalidator.start(index)
    assert len(core.barrier.cache) == 0
    assert await read(core, "logical/m/a") == b"v3"
