"""An initialised barrier over in-memory storage, for the stores above it
(modules with their own ``barrier`` or ``root_key`` fixture use theirs)."""

from __future__ import annotations

import os

import pytest

from node.barrier.barrier import Barrier
from node.physical.inmem import InmemBackend


@pytest.fixture
def root_key() -> bytes:
    return os.urandom(32)


@pytest.fixture
async def barrier(root_key: bytes) -> Barrier:
    barrier = Barrier(InmemBackend())
    await barrier.initialize(root_key)
    return barrier
