"""One cluster's replication state per kind, and the activation bundle.

Stored barrier-encrypted at ``core/replication/<kind>/state``, a key the
classifier marks ``IGNORED``: it never leaves the cluster. A secondary's
state is encrypted by the primary (with the keyring both then share) and
written raw at enable time, before the secondary holds the keys to read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from node.replication.classify import Kind, PathsFilter

__all__ = ["POSITION_KEY", "STATE_KEY", "Bundle", "KindState", "position_key", "state_key"]

STATE_KEY = "core/replication/{kind}/state"
POSITION_KEY = "core/replication/{kind}/position"


def state_key(kind: Kind) -> str:
    return STATE_KEY.format(kind=kind.value)


def position_key(kind: Kind) -> str:
    return POSITION_KEY.format(kind=kind.value)


@dataclass(frozen=True, slots=True)
class Bundle:
    """What a secondary-token wraps: where the primary is and who the secondary is."""

    kind: Kind
    primary_api_addr: str
    primary_cluster_addr: str
    cluster_id: str
    secondary_id: str
    ca_pem: str
    cert_pem: str
    key_pem: str = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "primary_api_addr": self.primary_api_addr,
            "primary_cluster_addr": self.primary_cluster_addr,
            "cluster_id": self.cluster_id,
            "secondary_id": self.secondary_id,
            "ca_pem": self.ca_pem,
            "cert_pem": self.cert_pem,
            "key_pem": self.key_pem,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Bundle:
        return cls(
            Kind(raw["kind"]),
            str(raw["primary_api_addr"]),
            str(raw["primary_cluster_addr"]),
            str(raw["cluster_id"]),
            str(raw["secondary_id"]),
            str(raw["ca_pem"]),
            str(raw["cert_pem"]),
            str(raw["key_pem"]),
        )


@dataclass
class KindState:
    """``mode``: disabled, primary or secondary."""

    kind: Kind
    mode: str = "disabled"
    cluster_id: str = ""
    #: primary: its replication address and CA (PEM, the key secret).
    primary_cluster_addr: str = ""
    ca_cert: str = ""
    ca_key: str = field(default="", repr=False)
    #: primary: secondary id -> {"revoked": bool}
    secondaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: primary (performance): secondary id -> paths filter
    filters: dict[str, PathsFilter] = field(default_factory=dict)
    #: secondary: the bundle it was enabled with
    bundle: Bundle | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "mode": self.mode,
            "cluster_id": self.cluster_id,
            "primary_cluster_addr": self.primary_cluster_addr,
            "ca_cert": self.ca_cert,
            "ca_key": self.ca_key,
            "secondaries": self.secondaries,
            "filters": {k: v.to_json() for k, v in self.filters.items()},
            "bundle": self.bundle.to_json() if self.bundle else None,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> KindState:
        return cls(
            Kind(raw["kind"]),
            str(raw["mode"]),
            str(raw.get("cluster_id", "")),
            str(raw.get("primary_cluster_addr", "")),
            str(raw.get("ca_cert", "")),
            str(raw.get("ca_key", "")),
            dict(raw.get("secondaries") or {}),
            {k: PathsFilter.from_json(v) for k, v in (raw.get("filters") or {}).items()},
            Bundle.from_json(raw["bundle"]) if raw.get("bundle") else None,
        )
