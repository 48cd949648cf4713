"""Backends the storage conformance suite runs against.

Every physical backend must behave identically through the ``PhysicalBackend``
protocol. To put a new backend under the suite, add one entry to
``BACKEND_FACTORIES``: a name and an async factory that opens a fresh, empty
store (it may keep its files under the ``tmp_path`` it is given).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from node.physical.file import FileBackend
from node.physical.inmem import InmemBackend
from sdk.physical import PhysicalBackend

BackendFactory = Callable[[Path], Awaitable[PhysicalBackend]]


async def _open_inmem(tmp_path: Path) -> PhysicalBackend:
    return InmemBackend()


async def _open_file(tmp_path: Path) -> PhysicalBackend:
    return FileBackend(tmp_path / "file-storage")


async def _open_raft(tmp_path: Path) -> PhysicalBackend:
    """A one-node Raft cluster on a free loopback port, once it leads."""
    from harness.raft import open_single_node

    return await open_single_node(tmp_path / "raft")


BACKEND_FACTORIES: dict[str, BackendFactory] = {
    "inmem": _open_inmem,
    "file": _open_file,
    "raft": _open_raft,
}


@pytest.fixture(params=list(BACKEND_FACTORIES))
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[PhysicalBackend]:
    store = await BACKEND_FACTORIES[request.param](tmp_path)
    try:
        yield store
    finally:
        await store.close()
