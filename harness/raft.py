"""A real Raft backend in this process (one node, loopback), for tests and benchmarks.

Single-node clusters elect themselves after one election timeout, so tests
use short timers; nothing here is meant for production configs. (It was
``consensus/testing.py``: test code does not ship in the server package.)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from consensus.backend import RaftBackend
from consensus.config import RaftConfig
from harness.ports import free_port

__all__ = [
    "TEST_TIMERS",
    "lose_first_callback",
    "make_config",
    "open_single_node",
    "single_node",
]

#: Fast timers for loopback tests (election after 40-80 ms of silence).
TEST_TIMERS: dict[str, Any] = {
    "heartbeat_interval": 0.01,
    "election_timeout_min": 0.04,
    "election_timeout_max": 0.08,
    "connection_timeout": 0.5,
    "leader_step_down_timeout": 0.5,
    "ping_interval": 0.1,
    "reconnect_interval": 0.1,
}


def make_config(data_dir: Path, **overrides: Any) -> RaftConfig:
    settings: dict[str, Any] = {
        "node_id": "node-1",
        "cluster_addr": f"127.0.0.1:{free_port()}",
        "data_dir": data_dir,
        "cluster_secret": os.urandom(32),
        **TEST_TIMERS,
    }
    settings.update(overrides)
    return RaftConfig(**settings)


@contextlib.asynccontextmanager
async def single_node(data_dir: Path, **overrides: Any) -> AsyncIterator[RaftBackend]:
    """:func:`open_single_node`, closed on the way out."""
    backend = await open_single_node(data_dir, **overrides)
    try:
        yield backend
    finally:
        await backend.close()


async def open_single_node(data_dir: Path, **overrides: Any) -> RaftBackend:
    """Open a one-node cluster and wait until it leads."""
    backend = await RaftBackend.open(make_config(data_dir, **overrides))
    try:
        await backend.wait_for_leader(timeout=10)
    except BaseException:
        await backend.close()
        raise
    return backend


def lose_first_callback(backend: RaftBackend, *, forget_outcomes: bool = True) -> list[bytes]:
    """Drop the callback of the first entry ``backend`` submits (it is still applied).

    With ``forget_outcomes`` its replica also forgets every outcome, as on a
    follower that has not applied the first attempt yet: every command is
    re-submitted, and must still be applied once. Returns the list of submitted
    entries, filled as they go."""
    submitted: list[bytes] = []
    real_submit = backend._node.submit

    def submit(blob: bytes, callback: Any, decoded: Any = None) -> None:
        submitted.append(blob)
        real_submit(blob, callback if len(submitted) > 1 else lambda *_: None, decoded)

    backend._node.submit = submit  # type: ignore[method-assign]
    if forget_outcomes:
        backend._node.state.result_for = lambda command_id: None  # type: ignore[method-assign]
    return submitted
