"""Builds a core on Raft storage: the driver from ``consensus``, the cluster from ``node``.

The api layer is where the two meet, since ``node`` may not import
pysyncobj. Addresses follow the reference: ``api_addr`` defaults to the
listener's own URL, ``cluster_addr`` to the listener's host with the next
port; either may be given as a URL (the scheme is dropped for Raft).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from consensus.driver import ConsensusDriver
from node.cluster.cluster import Cluster, ClusterSettings
from node.cluster.invalidation import Invalidator
from node.cluster.staleness import DEFAULT_MAX_LAG, DEFAULT_MAX_LEADER_LOSS, StalenessBounds
from node.cluster.storage import RaftStorage
from node.config import ConfigError, ServerConfig
from node.core.core import Core, CoreSettings

__all__ = ["raft_core"]

_NODE_ID_FILE = "node-id"


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if not port.isdigit():
        raise ConfigError(f"address {address!r} must be HOST:PORT")
    return host, int(port)


def _strip_scheme(address: str) -> str:
    _, sep, rest = address.partition("://")
    return (rest if sep else address).rstrip("/")


def node_id_for(path: Path, configured: str | None) -> str:
    """The configured id, or one generated once and kept beside the raft data."""
    if configured:
        return configured
    stored = path / _NODE_ID_FILE
    if stored.exists():
        return stored.read_text().strip()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    node_id = f"node-{uuid.uuid4()}"
    fd = os.open(stored, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(node_id + "\n")
    return node_id


def raft_core(config: ServerConfig, settings: CoreSettings) -> Core:
    options = config.storage.options
    path = Path(str(options["path"]))
    host, port = _host_port(config.listener.address)
    scheme = "http" if config.listener.tls_disable else "https"
    api_addr = (config.api_addr or f"{scheme}://{host}:{port}").rstrip("/")
    cluster_addr = _strip_scheme(config.cluster_addr) if config.cluster_addr else ""
    if not cluster_addr:
        cluster_addr = f"{host}:{port + 1}"
    node_id = node_id_for(path, options.get("node_id"))
    driver = ConsensusDriver(
        node_id=node_id,
        cluster_addr=cluster_addr,
        data_dir=path,
        performance_multiplier=int(options.get("performance_multiplier") or 1),
    )
    storage = RaftStorage(driver)
    core = Core(storage, settings)
    core.cluster = Cluster(
        core,
        storage,
        ClusterSettings(
            node_id=node_id,
            api_addr=api_addr,
            cluster_addr=cluster_addr,
            retry_join=tuple(options.get("retry_join", [])),
            performance_standby=not options.get("disable_performance_standby", False),
            staleness=StalenessBounds(
                max_leader_loss=float(
                    options.get("standby_read_max_leader_loss", DEFAULT_MAX_LEADER_LOSS)
                ),
                max_lag=int(options.get("standby_read_max_lag", DEFAULT_MAX_LAG)),
            ),
        ),
        Invalidator(core),
    )
    return core
