"""Read-only views of the core's state for status endpoints."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SealStatus"]


@dataclass(frozen=True, slots=True)
class SealStatus:
    type: str
    initialized: bool
    sealed: bool
    threshold: int
    shares: int
    progress: int
    nonce: str
    version: str
    cluster_name: str
    cluster_id: str
    storage_type: str
    #: Under an HSM seal ``t``/``n`` count the recovery shares.
    recovery_seal: bool = False
    #: The store is under the old seal of a configured seal migration (unseal with migrate).
    migration: bool = False

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "type": self.type,
            "initialized": self.initialized,
            "sealed": self.sealed,
            "t": self.threshold,
            "n": self.shares,
            "progress": self.progress,
            "nonce": self.nonce,
            "version": self.version,
            "build_date": "",
            "migration": self.migration,
            "recovery_seal": self.recovery_seal,
            "storage_type": self.storage_type,
        }
        if self.recovery_seal:
            body["recovery_seal_type"] = "shamir"
        if not self.sealed:
            body["cluster_name"] = self.cluster_name
            body["cluster_id"] = self.cluster_id
        return body
