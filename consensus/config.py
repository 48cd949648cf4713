"""Validated Raft settings and their translation into pysyncobj's SyncObjConf.

Defaults are tuned for fast failover on a LAN (measured in
:mod:`consensus.node`): heartbeats every 50 ms, elections after 250-600 ms
of silence, a leader that lost its majority steps down after 1.5 s (the
library default is 30 s of acting as a leader nobody follows).
"""

from __future__ import annotations

import enum
import ipaddress
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from consensus._vendor.pysyncobj import SyncObjConf
from consensus.dumps import JOURNAL_COMPACT_BYTES
from consensus.wire import APPEND_BATCH_BYTES, MAX_SNAPSHOT_CHUNK_BYTES
from sdk.certs import RaftTLS

__all__ = [
    "Durability",
    "RaftConfig",
    "RaftConfigError",
    "derive_transport_password",
    "parse_address",
    "to_syncobj_conf",
]

_MIN_SECRET_BYTES = 16
_HKDF_SALT = b"coffer raft transport"
_HKDF_INFO = b"coffer/raft/transport-password/v1"


class RaftConfigError(ValueError):
    """The Raft settings cannot be used; the node must not start."""


class Durability(enum.Enum):
    #: An entry is fsynced on a majority (the leader included) before any
    #: client is told it committed, in batches (one fsync per tick), as etcd.
    STRICT = "strict"
    #: The journal is fsynced every ``relaxed_sync_interval`` seconds only.
    #: Costs: a power cut or kernel crash on a majority loses up to that much
    #: acknowledged data (a process crash loses nothing: the page cache
    #: survives it). Gains: no fsync on the commit path.
    RELAXED = "relaxed"


def parse_address(address: str, what: str) -> tuple[str, int]:
    host, sep, port_text = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise RaftConfigError(f"{what} must be host:port, got {address!r}")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host, int(port_text)
    if ip.is_unspecified:
        raise RaftConfigError(f"{what} must name one interface, not {host}")
    return host, int(port_text)


def derive_transport_password(cluster_secret: bytes) -> str:
    """HKDF-SHA256 of the cluster key material: the pysyncobj ``password``.

    pysyncobj stretches it again with PBKDF2 over a fixed salt; that salt only
    hurts low-entropy passwords, and this one is 256 random-looking bits.
    """
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=_HKDF_INFO)
    return key.derive(cluster_secret).hex()


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """One node's Raft settings; :meth:`validate` runs on construction."""

    node_id: str
    #: ``host:port`` the Raft transport binds to and peers dial (never 0.0.0.0).
    cluster_addr: str
    data_dir: Path
    #: Key material the transport password is derived from (required).
    cluster_secret: bytes = field(repr=False)
    #: Initial voters other than this node: node id -> ``host:port``.
    peers: Mapping[str, str] = field(default_factory=dict)
    durability: Durability = Durability.STRICT
    relaxed_sync_interval: float = 1.0
    heartbeat_interval: float = 0.05
    election_timeout_min: float = 0.25
    election_timeout_max: float = 0.6
    connection_timeout: float = 2.0
    reconnect_interval: float = 0.5
    #: CheckQuorum: a leader that heard from no majority for this long steps
    #: down by itself (the default is the maximum election timeout).
    leader_step_down_timeout: float = 0.6
    #: PreVote (Raft thesis 9.6): a node asks whether it could win before it
    #: raises its term. Off only to show what it prevents (tests).
    pre_vote: bool = True
    #: How much faster a follower's clock may run than the leader's, as a
    #: fraction; the leader lease is ``election_timeout_min * (1 - margin)``.
    clock_drift_margin: float = 0.1
    #: Keep-alive traffic between all peers; 0 disables (only for measuring its effect).
    ping_interval: float = 0.25
    #: Per attempt, for every write: a silent callback never hangs a caller. A
    #: slow commit is not a lost one: the retry carries the same command id, so
    #: it is answered with the first attempt's result if that one committed.
    request_timeout: float = 2.0
    #: With the backoff (25 ms doubling to 400 ms) 8 attempts span a failover.
    request_attempts: int = 8
    #: Transactions per Raft entry at most (1 turns batching off: one entry per write).
    batch_max_commands: int = 256
    #: This node's batches awaiting their commit before the next one waits
    #: (see consensus/batching.py; measured in consensus/DESIGN.md).
    batch_max_in_flight: int = 1
    compaction_min_entries: int = 5000
    compaction_min_time: float = 300.0
    #: The journal is compacted once the entries applied since the dump outgrow
    #: the dump and this floor: a restart replays at most about that much
    #: (~0.7 s for 32 MiB here), and the journal's entries are held in memory.
    compaction_min_bytes: int = JOURNAL_COMPACT_BYTES
    snapshot_chunk_bytes: int = 1024 * 1024
    #: Mutual TLS between peers (consensus.pki), which then replaces Fernet;
    #: None: Fernet under the password derived from ``cluster_secret`` only.
    tls: RaftTLS | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if (
            not isinstance(self.cluster_secret, bytes)
            or len(self.cluster_secret) < _MIN_SECRET_BYTES
        ):
            raise RaftConfigError(
                f"cluster_secret must be at least {_MIN_SECRET_BYTES} bytes of key material; "
                "the Raft transport never runs without a password"
            )
        if not self.node_id or "\x00" in self.node_id:
            raise RaftConfigError("node_id must be a non-empty string")
        parse_address(self.cluster_addr, "cluster_addr")
        seen = {self.cluster_addr}
        for node_id, address in self.peers.items():
            parse_address(address, f"peer {node_id!r}")
            if node_id == self.node_id or address in seen:
                raise RaftConfigError(f"peer {node_id!r} duplicates a node id or address")
            seen.add(address)
        if self.heartbeat_interval <= 0:
            raise RaftConfigError("heartbeat_interval must be positive")
        if self.election_timeout_min <= 3 * self.heartbeat_interval:
            raise RaftConfigError("election_timeout_min must exceed 3 heartbeat intervals")
        if self.election_timeout_max <= self.election_timeout_min:
            raise RaftConfigError("election_timeout_max must exceed election_timeout_min")
        if self.connection_timeout < self.election_timeout_max:
            raise RaftConfigError("connection_timeout must be at least election_timeout_max")
        if self.leader_step_down_timeout <= self.heartbeat_interval:
            raise RaftConfigError("leader_step_down_timeout must exceed heartbeat_interval")
        if not 0 <= self.clock_drift_margin < 0.5:
            raise RaftConfigError("clock_drift_margin must be a fraction below 0.5")
        if self.lease_duration <= 2 * self.heartbeat_interval:
            raise RaftConfigError("the leader lease must span more than two heartbeats")
        if self.ping_interval < 0 or self.ping_interval * 2 > self.connection_timeout:
            raise RaftConfigError("ping_interval must be at most half of connection_timeout")
        if self.request_timeout <= 0 or self.request_attempts < 1:
            raise RaftConfigError("request_timeout and request_attempts must be positive")
        if self.batch_max_commands < 1 or self.batch_max_in_flight < 1:
            raise RaftConfigError("batch_max_commands and batch_max_in_flight must be positive")
        if (
            self.compaction_min_entries < 2
            or self.compaction_min_time <= 0
            or self.compaction_min_bytes < 1
        ):
            raise RaftConfigError("compaction thresholds are too small")
        if self.relaxed_sync_interval <= 0:
            raise RaftConfigError("relaxed_sync_interval must be positive")
        if not 0 < self.snapshot_chunk_bytes <= MAX_SNAPSHOT_CHUNK_BYTES:
            raise RaftConfigError(
                f"snapshot_chunk_bytes must be between 1 and {MAX_SNAPSHOT_CHUNK_BYTES}"
            )

    @property
    def lease_duration(self) -> float:
        """How long a majority's acknowledgement keeps the leader's lease.

        Each follower refuses votes for ``election_timeout_min`` after it
        received the acknowledged append (by its own clock); the leader counts
        from before it sent it (by its clock), and gives up the drift margin.
        """
        return self.election_timeout_min * (1 - self.clock_drift_margin)

    @property
    def tick_interval(self) -> float:
        """How long one tick may wait for network events (heartbeats need ~2 per period)."""
        return self.heartbeat_interval / 2


def to_syncobj_conf(
    config: RaftConfig,
    *,
    journal: Any,
    dump_file: Path,
    snapshot_store: Any,
    tls_contexts: tuple[ssl.SSLContext, ssl.SSLContext] | None = None,
) -> SyncObjConf:
    """The engine settings for ``config``; ``journal`` and ``snapshot_store`` are ours."""
    host, port = parse_address(config.cluster_addr, "cluster_addr")
    conf = SyncObjConf(
        # With mutual TLS the link is already encrypted and authenticated (in C,
        # with per-connection keys, so nothing replays across connections): no
        # Fernet per message on top. Without TLS the password's Fernet is all there is.
        password=None if tls_contexts else derive_transport_password(config.cluster_secret),
        # Without this the library binds 0.0.0.0 whatever the self address says.
        bindAddress=f"{host}:{port}",
        autoTick=False,  # consensus.node runs the tick loop (sync points, clean stop)
        appendEntriesUseBatch=False,  # replicate at once instead of on the next 100 ms tick
        appendEntriesPeriod=config.heartbeat_interval,
        # The commit index rides on the next append; alone only after this long.
        commitPropagationDelay=config.heartbeat_interval / 10,
        # Entries per AppendEntries; a bigger one travels alone (consensus.wire caps frames).
        appendEntriesBatchSizeBytes=APPEND_BATCH_BYTES,
        raftMinTimeout=config.election_timeout_min,
        raftMaxTimeout=config.election_timeout_max,
        connectionTimeout=config.connection_timeout,
        connectionRetryTime=config.reconnect_interval,
        leaderFallbackTimeout=config.leader_step_down_timeout,  # CheckQuorum
        preVote=config.pre_vote,
        tcp_keepalive=(2, 1, 3),
        commandsWaitLeader=False,  # fail fast (MISSING_LEADER); RaftBackend retries
        dynamicMembershipChange=True,
        journalFile=journal,
        fullDumpFile=str(dump_file),
        snapshotStore=snapshot_store,  # our dumps, never the library's pickles
        sslServerContext=tls_contexts[0] if tls_contexts else None,
        sslClientContext=tls_contexts[1] if tls_contexts else None,
        useFork=False,
        logCompactionMinEntries=config.compaction_min_entries,
        logCompactionMinTime=config.compaction_min_time,
        logCompactionBatchSize=config.snapshot_chunk_bytes,
        maxBindRetries=1,
    )
    conf.validate()
    return conf
