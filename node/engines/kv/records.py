"""Stored shapes of KV version 2: the mount config, one metadata record per key
and one record per version, plus the time arithmetic they share."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sdk.random_pool import random_uuid4_hex
from sdk.record import record

__all__ = [
    "DEFAULT_MAX_VERSIONS",
    "KeyMetadata",
    "MountConfig",
    "VersionInfo",
    "deletion_time",
    "go_duration",
    "now_rfc3339",
]

DEFAULT_MAX_VERSIONS = 10


#: The last second formatted, and its text: every write takes a timestamp, and
#: ``datetime.now(UTC).isoformat`` was ~2 % of a KV write.
_second: tuple[int, str] = (-1, "")


def now_rfc3339() -> str:
    """Fixed-width UTC timestamps, so plain string comparison orders them (as
    ``_format`` writes them: seconds, six digits of microseconds, ``Z``)."""
    global _second
    seconds, micros = divmod(time.time_ns() // 1000, 1_000_000)
    formatted, text = _second
    if formatted != seconds:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second = (seconds, text)
    return f"{text}.{micros:06d}Z"


def _format(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def go_duration(seconds: int) -> str:
    """Whole seconds as Go's ``time.Duration.String`` renders them ("1h0m0s", "-1s", "0s"),
    which is how the reference reports ``delete_version_after``."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


@dataclass(slots=True)
class MountConfig:
    """The ``config`` record. ``delete_version_after`` is in seconds; negative
    means disabled for every key of the mount (stored as -1, read back "-1s")."""

    max_versions: int = 0
    cas_required: bool = False
    delete_version_after: int = 0

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> MountConfig:
        return cls(**raw) if raw else cls()

    def to_json(self) -> dict[str, Any]:
        return {
            "max_versions": self.max_versions,
            "cas_required": self.cas_required,
            "delete_version_after": self.delete_version_after,
        }


def deletion_time(created: str, config: MountConfig, key_after: int) -> str:
    """When a version written at ``created`` expires: after the smaller of the
    mount's and the key's non-zero ``delete_version_after``; never when the
    mount disables it or neither is set."""
    if config.delete_version_after < 0:
        return ""
    candidates = [s for s in (config.delete_version_after, key_after) if s > 0]
    if not candidates:
        return ""
    moment = datetime.fromisoformat(created.replace("Z", "+00:00"))
    return _format(moment + timedelta(seconds=min(candidates)))


@record
class VersionInfo:
    created_time: str
    deletion_time: str = ""
    destroyed: bool = False

    def is_live(self, now: str | None = None) -> bool:
        """``now`` (RFC 3339) is only needed, and only computed when not given,
        if a deletion time is set: most versions have none."""
        if self.destroyed:
            return False
        if not self.deletion_time:
            return True
        return self.deletion_time > (now or now_rfc3339())

    def to_json(self) -> dict[str, Any]:
        # A dict literal, not ``asdict``: that deep-copies and showed in write profiles.
        return {
            "created_time": self.created_time,
            "deletion_time": self.deletion_time,
            "destroyed": self.destroyed,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> VersionInfo:
        return cls(raw["created_time"], raw.get("deletion_time", ""), raw.get("destroyed", False))


@dataclass(slots=True)
class KeyMetadata:
    """Versions and settings of one key. ``data_id`` names where version bodies
    are stored, so a key path never collides with another key's version records.

    ``oldest_version`` is the lowest version still held (0 when there is none).
    ``updated_time`` moves only when a version is added, as in the reference.
    """

    data_id: str = field(default_factory=random_uuid4_hex)
    versions: dict[int, VersionInfo] = field(default_factory=dict)
    current_version: int = 0
    oldest_version: int = 0
    created_time: str = field(default_factory=now_rfc3339)
    updated_time: str = ""
    max_versions: int = 0
    cas_required: bool = False
    delete_version_after: int = 0
    custom_metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.updated_time = self.updated_time or self.created_time

    def to_json(self) -> dict[str, Any]:
        """The stored record. Field order and shape are those ``asdict`` gave, so
        the encoded bytes are unchanged; ``custom_metadata`` is copied so the
        result never aliases this record."""
        return {
            "data_id": self.data_id,
            # ``VersionInfo.to_json`` inlined: this runs for every version on every write.
            "versions": {
                str(k): {
                    "created_time": v.created_time,
                    "deletion_time": v.deletion_time,
                    "destroyed": v.destroyed,
                }
                for k, v in self.versions.items()
            },
            "current_version": self.current_version,
            "oldest_version": self.oldest_version,
            "created_time": self.created_time,
            "updated_time": self.updated_time,
            "max_versions": self.max_versions,
            "cas_required": self.cas_required,
            "delete_version_after": self.delete_version_after,
            "custom_metadata": dict(self.custom_metadata),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> KeyMetadata:
        """Missing fields take their defaults, as ``cls(**raw)`` gave them."""
        return cls(
            data_id=raw["data_id"] if "data_id" in raw else random_uuid4_hex(),
            versions={int(k): VersionInfo.from_json(v) for k, v in raw["versions"].items()},
            current_version=raw.get("current_version", 0),
            oldest_version=raw.get("oldest_version", 0),
            created_time=raw["created_time"] if "created_time" in raw else now_rfc3339(),
            updated_time=raw.get("updated_time", ""),
            max_versions=raw.get("max_versions", 0),
            cas_required=raw.get("cas_required", False),
            delete_version_after=raw.get("delete_version_after", 0),
            custom_metadata=raw.get("custom_metadata", {}),
        )

    def copy(self) -> KeyMetadata:
        """An independent copy to mutate, so a shared decoded record stays as stored.
        Version records are frozen (a change replaces one), so they are shared."""
        return KeyMetadata(
            data_id=self.data_id,
            versions=dict(self.versions),
            current_version=self.current_version,
            oldest_version=self.oldest_version,
            created_time=self.created_time,
            updated_time=self.updated_time,
            max_versions=self.max_versions,
            cas_required=self.cas_required,
            delete_version_after=self.delete_version_after,
            custom_metadata=dict(self.custom_metadata),
        )

    def add_version(self, created: str, expires: str, config: MountConfig) -> list[int]:
        """Append the next version; return the numbers pruned to honour max_versions.

        The limit is the larger of the key's and the mount's ``max_versions``
        (10 when both are 0), as the reference computes it.
        """
        self.current_version += 1
        self.versions[self.current_version] = VersionInfo(created, expires)
        self.updated_time = created
        keep = max(self.max_versions, config.max_versions) or DEFAULT_MAX_VERSIONS
        pruned = sorted(self.versions)[: max(0, len(self.versions) - keep)]
        for version in pruned:
            del self.versions[version]
        self.oldest_version = min(self.versions)
        return pruned

    def version_json(self, version: int) -> dict[str, Any]:
        info = self.versions[version]
        return {
            "version": version,
            "created_time": info.created_time,
            "deletion_time": info.deletion_time,
            "destroyed": info.destroyed,
            "custom_metadata": dict(self.custom_metadata) or None,
        }

    def metadata_json(self) -> dict[str, Any]:
        """The body of a ``metadata/:path`` read."""
        return {
            "versions": {
                str(n): {
                    "created_time": v.created_time,
                    "deletion_time": v.deletion_time,
                    "destroyed": v.destroyed,
                }
                for n, v in sorted(self.versions.items())
            },
            "current_version": self.current_version,
            "oldest_version": self.oldest_version,
            "created_time": self.created_time,
            "updated_time": self.updated_time,
            "max_versions": self.max_versions,
            "cas_required": self.cas_required,
            "delete_version_after": go_duration(self.delete_version_after),
            "custom_metadata": dict(self.custom_metadata) or None,
        }
