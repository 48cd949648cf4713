"""Stored shapes of KV version 2: one metadata record per key, one record per version."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["KeyMetadata", "VersionInfo", "now_rfc3339"]


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class VersionInfo:
    created_time: str
    deletion_time: str = ""
    destroyed: bool = False

    def is_live(self, now: str) -> bool:
        return not self.destroyed and not (self.deletion_time and self.deletion_time <= now)


@dataclass(slots=True)
class KeyMetadata:
    """Versions of one key. ``data_id`` names where version bodies are stored,
    so a key path never collides with another key's version records."""

    data_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    versions: dict[int, VersionInfo] = field(default_factory=dict)
    current_version: int = 0
    oldest_version: int = 0
    created_time: str = field(default_factory=now_rfc3339)
    updated_time: str = field(default_factory=now_rfc3339)
    max_versions: int = 0
    cas_required: bool = False
    delete_version_after: int = 0
    custom_metadata: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        raw = asdict(self)
        raw["versions"] = {str(k): asdict(v) for k, v in self.versions.items()}
        return raw

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> KeyMetadata:
        versions = {int(k): VersionInfo(**v) for k, v in raw.pop("versions").items()}
        return cls(versions=versions, **raw)

    def version_json(self, version: int) -> dict[str, Any]:
        info = self.versions[version]
        return {
            "version": version,
            "created_time": info.created_time,
            "deletion_time": info.deletion_time,
            "destroyed": info.destroyed,
            "custom_metadata": self.custom_metadata or None,
        }
