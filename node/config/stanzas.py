"""Validation of one parsed config file into a typed, partial ``FileConfig``.

Each file is checked on its own so that every error names the file it is in;
merging the partial results is ``loader``'s job.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from node.config.blocks import block_kind
from node.config.model import (
    DEFAULT_ADDRESS,
    DEFAULT_CACHE_SIZE,
    DEFAULT_LEASE_TTL,
    DEFAULT_LOGSHIPPER_LENGTH,
    DEFAULT_LOGSHIPPER_SIZE,
    DEFAULT_MAX_REQUEST_SIZE,
    DEFAULT_PROMETHEUS_RETENTION,
    DEFAULT_TLS_MIN_VERSION,
    ListenerConfig,
    ReplicationConfig,
    SealStanza,
    StorageConfig,
    TelemetryConfig,
)
from node.config.schema import (
    Where,
    as_block,
    as_bool,
    as_duration,
    as_int,
    as_str,
    check_keys,
    describe,
    labelled_blocks,
    optional,
)
from sdk.durations import UNIT_SECONDS, UNITS

__all__ = ["SCALAR_KEYS", "STANZA_KEYS", "FileConfig", "parse_file"]

LOG_LEVELS = ("trace", "debug", "info", "warn", "error")
TLS_VERSIONS = ("tls12", "tls13")

_LISTENER_KEYS = (
    "address",
    "tls_disable",
    "tls_cert_file",
    "tls_key_file",
    "max_request_size",
    "tls_min_version",
    "http_read_header_timeout",
    "http_read_timeout",
    "http_idle_timeout",
    "max_connections",
)
# type -> (allowed keys, required keys)
_STORAGE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "inmem": ((), ()),
    "file": (("path",), ("path",)),
    "raft": (
        (
            "path",
            "node_id",
            "retry_join",
            "performance_multiplier",
            "disable_performance_standby",
            "standby_read_max_leader_loss",
            "standby_read_max_lag",
        ),
        ("path",),
    ),
}
_RETRY_JOIN_KEYS = (
    "leader_api_addr",
    "leader_ca_cert_file",
    "leader_client_cert_file",
    "leader_client_key_file",
    "leader_tls_servername",
)
_PKCS11_KEYS = (
    "lib",
    "slot",
    "pin",
    "key_label",
    "hmac_key_label",
    "generate_key",
    "mechanism",
    "hmac_mechanism",
    "token_label",
    "disabled",
)
_SEAL_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "shamir": ((), ()),
    # The PIN may come from the environment, as in Vault, so only these are required here.
    "pkcs11": (_PKCS11_KEYS, ("lib", "key_label")),
}
_REPLICATION_KEYS = ("logshipper_buffer_length", "logshipper_buffer_size")
_TELEMETRY_KEYS = (
    "prometheus_retention_time",
    "disable_hostname",
    "unauthenticated_metrics_access",
    "statsd_address",
    "dogstatsd_addr",
    "dogstatsd_tags",
)


@dataclass(frozen=True, slots=True)
class FileConfig:
    """What one file sets; ``None`` means it leaves the value to other files or defaults."""

    source: str
    listener: ListenerConfig | None = None
    #: Further ``listener "tcp"`` blocks of the same file, in order.
    extra_listeners: tuple[ListenerConfig, ...] = ()
    storage: StorageConfig | None = None
    seal: SealStanza | None = None
    telemetry: TelemetryConfig | None = None
    replication: ReplicationConfig | None = None
    ui: bool | None = None
    api_addr: str | None = None
    cluster_addr: str | None = None
    cluster_name: str | None = None
    log_level: str | None = None
    default_lease_ttl: int | None = None
    max_lease_ttl: int | None = None
    cache_size: int | None = None
    disable_cache: bool | None = None


def parse_file(data: Any, source: str) -> FileConfig:
    """Validate the top level of one file's pyhcl output."""
    root = Where(source)
    if not isinstance(data, dict):
        raise root.error(f"expected an object at the top level, got {describe(data)}")
    found: dict[str, Any] = {}
    for key, value in data.items():
        if key in _STANZAS:
            found[key] = _STANZAS[key](value, root)
        elif key in _SCALARS:
            found[key] = _SCALARS[key](value, root.at(key))
        elif isinstance(value, dict | list):
            raise root.error(f'unknown stanza "{key}"')
        else:
            raise root.error(f'unknown key "{key}"')
    if found.get("listener"):
        found["listener"], *extra = found["listener"]
        found["extra_listeners"] = tuple(extra)
    found.pop("disable_mlock", None)  # Vault configs always carry it; memory locking is moot here
    return FileConfig(source, **found)


def _listeners(value: Any, root: Where) -> list[ListenerConfig] | None:
    """Every ``listener "tcp"`` block, in order; the server binds each."""
    blocks = labelled_blocks(value, root.at("listener"))
    for label, _ in blocks:
        if block_kind(label) != "tcp":
            raise root.at(f'listener "{block_kind(label)}"').error(
                "unknown listener type (supported: tcp)"
            )
    if not blocks:
        return None
    where = root.at('listener "tcp"')
    found = [_listener(body, where) for _, body in blocks]
    addresses = [listener.address for listener in found]
    for address in addresses:
        if addresses.count(address) > 1:
            raise where.error(f"address {address!r} is used by more than one listener")
    return found


def _listener(body: dict[str, Any], where: Where) -> ListenerConfig:
    check_keys(body, where, _LISTENER_KEYS)
    tls_disable = optional(body, "tls_disable", where, as_bool, False)
    cert = optional(body, "tls_cert_file", where, _nonempty, None)
    key = optional(body, "tls_key_file", where, _nonempty, None)
    if not tls_disable:
        for name, present in (("tls_cert_file", cert), ("tls_key_file", key)):
            if present is None:
                raise where.error(f'"{name}" is required unless tls_disable is true')
    return ListenerConfig(
        address=optional(body, "address", where, _address, DEFAULT_ADDRESS),
        tls_disable=tls_disable,
        tls_cert_file=cert,
        tls_key_file=key,
        max_request_size=(
            optional(body, "max_request_size", where, _non_negative, 0) or DEFAULT_MAX_REQUEST_SIZE
        ),
        tls_min_version=optional(
            body, "tls_min_version", where, _tls_version, DEFAULT_TLS_MIN_VERSION
        ),
        **_slow_client_limits(body, where),
    )


def _slow_client_limits(body: dict[str, Any], where: Where) -> dict[str, int]:
    """The listener's timeouts (durations) and connection cap; absent keys keep defaults."""
    limits: dict[str, int] = {
        name: as_duration(body[name], where.at(name))
        for name in ("http_read_header_timeout", "http_read_timeout", "http_idle_timeout")
        if name in body
    }
    if "max_connections" in body:
        cap = _non_negative(body["max_connections"], where.at("max_connections"))
        if cap < 1:
            raise where.at("max_connections").error("must be at least 1")
        limits["max_connections"] = cap
    return limits


def _storage(value: Any, root: Where) -> StorageConfig | None:
    blocks = labelled_blocks(value, root.at("storage"))
    if len(blocks) > 1:
        kinds = ", ".join(f'"{kind}"' for kind, _ in blocks)
        raise root.at("storage").error(
            f"more than one storage stanza ({kinds}); only one is allowed"
        )
    if not blocks:
        return None
    kind, body = blocks[0]
    where = root.at(f'storage "{kind}"')
    if kind not in _STORAGE_KEYS:
        raise where.error(f"unknown storage type (supported: {', '.join(_STORAGE_KEYS)})")
    allowed, required = _STORAGE_KEYS[kind]
    check_keys(body, where, allowed, required)
    options: dict[str, Any] = {}
    if "path" in body:
        options["path"] = _nonempty(body["path"], where.at("path"))
    if kind == "raft":
        if "node_id" in body:
            options["node_id"] = _nonempty(body["node_id"], where.at("node_id"))
        if "performance_multiplier" in body:
            options["performance_multiplier"] = _non_negative(
                body["performance_multiplier"], where.at("performance_multiplier")
            )
        if "disable_performance_standby" in body:
            # Absent means "followers are performance standbys" (docs/clustering.md).
            options["disable_performance_standby"] = as_bool(
                body["disable_performance_standby"], where.at("disable_performance_standby")
            )
        if "standby_read_max_leader_loss" in body:
            options["standby_read_max_leader_loss"] = _fine_duration(
                body["standby_read_max_leader_loss"], where.at("standby_read_max_leader_loss")
            )
        if "standby_read_max_lag" in body:
            options["standby_read_max_lag"] = _non_negative(
                body["standby_read_max_lag"], where.at("standby_read_max_lag")
            )
        options["retry_join"] = _retry_joins(body.get("retry_join", []), where)
    return StorageConfig(kind, options)


def _retry_joins(value: Any, where: Where) -> list[dict[str, str]]:
    blocks = value if isinstance(value, list) else [value]
    joins: list[dict[str, str]] = []
    for index, block in enumerate(blocks):
        here = where.at(f"retry_join[{index}]" if len(blocks) > 1 else "retry_join")
        if not isinstance(block, dict):
            raise here.error(f"expected a block, got {describe(block)}")
        check_keys(block, here, _RETRY_JOIN_KEYS, ("leader_api_addr",))
        joins.append({key: _nonempty(raw, here.at(key)) for key, raw in block.items()})
    return joins


def _seal(value: Any, root: Where) -> SealStanza | None:
    blocks = labelled_blocks(value, root.at("seal"))
    if len(blocks) > 1:
        kinds = ", ".join(f'"{kind}"' for kind, _ in blocks)
        raise root.at("seal").error(f"more than one seal stanza ({kinds}); only one is allowed")
    if not blocks:
        return None
    kind, body = blocks[0]
    where = root.at(f'seal "{kind}"')
    if kind not in _SEAL_KEYS:
        raise where.error(f"unknown seal type (supported: {', '.join(_SEAL_KEYS)})")
    allowed, required = _SEAL_KEYS[kind]
    check_keys(body, where, allowed, required)
    coerce: dict[str, Callable[[Any, Where], str]] = {
        "slot": _slot,
        "mechanism": _mechanism,
        "hmac_mechanism": _mechanism,
        "generate_key": lambda raw, here: "true" if as_bool(raw, here) else "false",
        "disabled": lambda raw, here: "true" if as_bool(raw, here) else "false",
    }
    return SealStanza(
        kind, {key: coerce.get(key, as_str)(raw, where.at(key)) for key, raw in body.items()}
    )


def _telemetry(value: Any, root: Where) -> TelemetryConfig:
    where = root.at("telemetry")
    body = as_block(value, where)
    check_keys(body, where, _TELEMETRY_KEYS)
    return TelemetryConfig(
        prometheus_retention_time=optional(
            body, "prometheus_retention_time", where, as_duration, DEFAULT_PROMETHEUS_RETENTION
        ),
        disable_hostname=optional(body, "disable_hostname", where, as_bool, False),
        unauthenticated_metrics_access=optional(
            body, "unauthenticated_metrics_access", where, as_bool, False
        ),
        statsd_address=optional(body, "statsd_address", where, _address, ""),
        dogstatsd_addr=optional(body, "dogstatsd_addr", where, _address, ""),
        dogstatsd_tags=optional(body, "dogstatsd_tags", where, _tags, ()),
    )


def _replication(value: Any, root: Where) -> ReplicationConfig:
    where = root.at("replication")
    body = as_block(value, where)
    check_keys(body, where, _REPLICATION_KEYS)
    return ReplicationConfig(
        logshipper_buffer_length=optional(
            body, "logshipper_buffer_length", where, _positive, DEFAULT_LOGSHIPPER_LENGTH
        ),
        logshipper_buffer_size=optional(
            body, "logshipper_buffer_size", where, _positive, DEFAULT_LOGSHIPPER_SIZE
        ),
    )


def _positive(value: Any, where: Where) -> int:
    number = as_int(value, where)
    if number < 1:
        raise where.error(f"must be at least 1, got {number}")
    return number


def _tags(value: Any, where: Where) -> tuple[str, ...]:
    """``["env:prod", "team:x"]``: DogStatsD tags added to every metric."""
    if not isinstance(value, list):
        raise where.error(f"expected a list of strings, got {describe(value)}")
    tags = tuple(as_str(item, where) for item in value)
    for tag in tags:
        if not tag or any(c in tag for c in "|,#\n") or not tag.isprintable():
            raise where.error(f"invalid tag {tag!r}: no '|', ',', '#' or control characters")
    return tags


def _nonempty(value: Any, where: Where) -> str:
    text = as_str(value, where)
    if not text.strip():
        raise where.error("must not be empty")
    return text


def _non_negative(value: Any, where: Where) -> int:
    number = as_int(value, where)
    if number < 0:
        raise where.error(f"must not be negative, got {number}")
    return number


def _fine_duration(value: Any, where: Where) -> float:
    """Seconds, sub-second units allowed (``"500ms"``, ``"1.5s"``, ``2``): Raft-scale bounds."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    text = value.strip() if isinstance(value, str) else ""
    if not text or not re.fullmatch(rf"(?:\d+(?:\.\d+)?(?:{UNITS}))+", text):
        raise where.error(f'expected a duration such as "500ms" or "2s", got {describe(value)}')
    return sum(
        float(number) * UNIT_SECONDS[unit]
        for number, unit in re.findall(rf"(\d+(?:\.\d+)?)({UNITS})", text)
    )


def _address(value: Any, where: Where) -> str:
    """``host:port`` (``[::1]:8200`` for IPv6); checked now so a typo fails before binding."""
    text = as_str(value, where)
    _, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise where.error(f'expected "host:port", got {describe(text)}')
    return text


def _tls_version(value: Any, where: Where) -> str:
    text = as_str(value, where).lower()
    if text not in TLS_VERSIONS:
        raise where.error(f'expected "tls12" or "tls13", got {describe(value)}')
    return text


def _lease_ttl(value: Any, where: Where) -> int:
    """0 means "the default", as in Vault."""
    return as_duration(value, where) or DEFAULT_LEASE_TTL


def _cache_size(value: Any, where: Where) -> int:
    """Entries; 0 means the default, as in Vault (Vault writes it as a string)."""
    return _non_negative(value, where) or DEFAULT_CACHE_SIZE


def _log_level(value: Any, where: Where) -> str:
    text = as_str(value, where).strip().lower()
    text = "warn" if text == "warning" else text
    if text not in LOG_LEVELS:
        raise where.error(f"expected one of {', '.join(LOG_LEVELS)}, got {describe(value)}")
    return text


def _slot(value: Any, where: Where) -> str:
    return str(_non_negative(value, where))


def _mechanism(value: Any, where: Where) -> str:
    """Vault writes it as ``"0x1087"``; pyhcl turns a bare ``0x1087`` into an int."""
    if isinstance(value, int) and not isinstance(value, bool):
        return hex(value)
    return _nonempty(value, where)


_STANZAS: dict[str, Callable[[Any, Where], object]] = {
    "listener": _listeners,
    "storage": _storage,
    "seal": _seal,
    "telemetry": _telemetry,
    "replication": _replication,
}
_SCALARS: dict[str, Callable[[Any, Where], object]] = {
    "ui": as_bool,
    "disable_mlock": as_bool,
    "api_addr": as_str,
    "cluster_addr": as_str,
    "cluster_name": as_str,
    "log_level": _log_level,
    "default_lease_ttl": _lease_ttl,
    "max_lease_ttl": _lease_ttl,
    "cache_size": _cache_size,
    "disable_cache": as_bool,
}
STANZA_KEYS = tuple(_STANZAS)
SCALAR_KEYS = tuple(key for key in _SCALARS if key != "disable_mlock")
