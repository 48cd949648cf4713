"""Server configuration: reading Vault-style HCL/JSON files into a typed ``ServerConfig``.

This package owns the config file format — which stanzas and keys exist,
their types and defaults — and reports every mistake as a ``ConfigError``
naming the file and key, so a bad config stops start-up instead of being
half-applied. A file may hold several ``listener "tcp"`` blocks (pyhcl would
merge them; ``blocks`` keeps them apart).
"""

from node.config.errors import ConfigError
from node.config.loader import dev_config, load_config
from node.config.model import (
    DEFAULT_ADDRESS,
    DEFAULT_CACHE_SIZE,
    DEFAULT_LEASE_TTL,
    DEFAULT_LOG_LEVEL,
    DEFAULT_MAX_REQUEST_SIZE,
    DEFAULT_PROMETHEUS_RETENTION,
    DEFAULT_TLS_MIN_VERSION,
    ListenerConfig,
    ReplicationConfig,
    SealStanza,
    ServerConfig,
    StorageConfig,
    TelemetryConfig,
)

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_CACHE_SIZE",
    "DEFAULT_LEASE_TTL",
    "DEFAULT_LOG_LEVEL",
    "DEFAULT_MAX_REQUEST_SIZE",
    "DEFAULT_PROMETHEUS_RETENTION",
    "DEFAULT_TLS_MIN_VERSION",
    "ConfigError",
    "ListenerConfig",
    "ReplicationConfig",
    "SealStanza",
    "ServerConfig",
    "StorageConfig",
    "TelemetryConfig",
    "dev_config",
    "load_config",
]
