"""Helpers for tests that need a real Raft backend (one node, loopback).

Single-node clusters elect themselves after one election timeout, so tests
use short timers; nothing here is meant for production configs.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from consensus.backend import RaftBackend
from consensus.config import RaftConfig

__all__ = ["TEST_TIMERS", "free_port", "make_config", "open_single_node"]

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


def free_port() -> int:
    """A currently unused loopback port (racy by nature; fine for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


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


async def open_single_node(data_dir: Path, **overrides: Any) -> RaftBackend:
    """Open a one-node cluster and wait until it leads."""
    backend = await RaftBackend.open(make_config(data_dir, **overrides))
    try:
        await backend.wait_for_leader(timeout=10)
    except BaseException:
        await backend.close()
        raise
    return backend
