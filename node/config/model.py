"""The validated server configuration: immutable, fully typed, defaults applied."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from node.barrier.cache import DEFAULT_CACHE_SIZE

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_LEASE_TTL",
    "DEFAULT_LOG_LEVEL",
    "DEFAULT_MAX_REQUEST_SIZE",
    "DEFAULT_PROMETHEUS_RETENTION",
    "DEFAULT_TLS_MIN_VERSION",
    "ListenerConfig",
    "SealStanza",
    "ServerConfig",
    "StorageConfig",
    "TelemetryConfig",
]

DEFAULT_ADDRESS = "127.0.0.1:8200"
DEFAULT_MAX_REQUEST_SIZE = 32 * 1024 * 1024
DEFAULT_TLS_MIN_VERSION = "tls12"
DEFAULT_LEASE_TTL = 32 * 24 * 3600  # Vault's 768h, for both default and max
DEFAULT_LOG_LEVEL = "info"
DEFAULT_PROMETHEUS_RETENTION = 24 * 3600  # Vault's default; 0 disables Prometheus output

_SECRET_SEAL_OPTIONS = frozenset({"pin"})


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """One ``listener "tcp"`` block (``node.config.blocks`` keeps repeated ones apart)."""

    address: str = DEFAULT_ADDRESS
    tls_disable: bool = False
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE
    tls_min_version: str = DEFAULT_TLS_MIN_VERSION
    #: Slow-client limits (seconds; 0 disables one), Vault's names and defaults;
    #: ``max_connections`` is Coffer's own cap on open client connections.
    http_read_header_timeout: int = 10
    http_read_timeout: int = 30
    http_idle_timeout: int = 300
    max_connections: int = 1024


@dataclass(frozen=True, slots=True)
class StorageConfig:
    """Storage type and its validated options, as ``node.physical.factory`` consumes them.

    ``raft`` options always carry ``retry_join`` as a list of dicts (pyhcl
    yields a dict for one block and a list for several).
    """

    type: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, repr=False)
class SealStanza:
    """A ``seal`` stanza; options are strings, as the HSM library takes them."""

    type: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        # The PKCS#11 PIN unlocks the HSM: keep it out of logs and tracebacks.
        shown = {
            key: "<redacted>" if key in _SECRET_SEAL_OPTIONS else value
            for key, value in self.options.items()
        }
        return f"SealStanza(type={self.type!r}, options={shown!r})"


#: Vault's defaults for the primary's in-memory WAL buffer (``replication`` stanza).
DEFAULT_LOGSHIPPER_LENGTH = 16384
DEFAULT_LOGSHIPPER_SIZE = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    """The ``replication`` stanza: how many recent WALs (and bytes of them) a primary
    keeps for secondaries to resume from; one that fell further behind syncs."""

    logshipper_buffer_length: int = DEFAULT_LOGSHIPPER_LENGTH
    logshipper_buffer_size: int = DEFAULT_LOGSHIPPER_SIZE


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    prometheus_retention_time: int = DEFAULT_PROMETHEUS_RETENTION
    disable_hostname: bool = False
    unauthenticated_metrics_access: bool = False
    #: ``HOST:PORT`` of a statsd server metrics are pushed to over UDP ("" = none).
    statsd_address: str = ""
    #: ``HOST:PORT`` of a DogStatsD agent (statsd lines with ``|#tags``).
    dogstatsd_addr: str = ""
    dogstatsd_tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``coffer server`` needs to start; ``sources`` lists the files merged."""

    listener: ListenerConfig
    storage: StorageConfig
    #: The ``listener "tcp"`` blocks after the first, each bound as well.
    extra_listeners: tuple[ListenerConfig, ...] = ()
    seal: SealStanza | None = None
    ui: bool = False
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    replication: ReplicationConfig = field(default_factory=ReplicationConfig)
    api_addr: str = ""
    cluster_addr: str = ""
    cluster_name: str = ""
    log_level: str = DEFAULT_LOG_LEVEL
    default_lease_ttl: int = DEFAULT_LEASE_TTL
    max_lease_ttl: int = DEFAULT_LEASE_TTL
    #: Entries in the barrier's read cache of decrypted values (Vault's ``cache_size``).
    cache_size: int = DEFAULT_CACHE_SIZE
    disable_cache: bool = False
    sources: tuple[str, ...] = ()

    @property
    def listeners(self) -> tuple[ListenerConfig, ...]:
        """Every listener, the first (``listener``) first."""
        return (self.listener, *self.extra_listeners)

    @property
    def seal_type(self) -> str:
        """The seal in force: no ``seal`` stanza means Shamir."""
        return self.seal.type if self.seal is not None else "shamir"
