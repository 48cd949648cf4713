"""A mount: where an engine or auth method is mounted, its tuning and its storage prefix.

A leaf value (no engine, router or core imports), so the system view handed
to backends can carry it without a cycle through the router.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from node.base62 import random_base62
from sdk.errors import InvalidRequestError

__all__ = ["MountEntry", "new_mount", "normalise_path"]


@dataclass(frozen=True, slots=True)
class MountEntry:
    """One mounted engine; its data lives under ``logical/<uuid>/``."""

    path: str
    type: str
    uuid: str
    accessor: str
    description: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    local: bool = False
    seal_wrap: bool = False
    #: "secret" for engines (``sys/mounts``), "auth" for methods (``sys/auth``).
    table: str = "secret"
    namespace_id: str = "root"
    #: The namespace's path ("" for root, "team-a/" for a child); fixed for life.
    namespace_path: str = ""

    @property
    def route_path(self) -> str:
        """Where the router finds it: the namespace path, then ``auth/`` for methods."""
        return self.namespace_path + (f"auth/{self.path}" if self.table == "auth" else self.path)

    @property
    def storage_prefix(self) -> str:
        namespace = "" if self.namespace_id == "root" else f"namespaces/{self.namespace_id}/"
        return f"{namespace}{'auth' if self.table == 'auth' else 'logical'}/{self.uuid}/"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> MountEntry:
        return cls(**raw)

    @property
    def listing_visibility(self) -> str:
        """ "unauth" lists the mount in unauthenticated ``sys/internal/ui/mounts``."""
        return str(self.config.get("listing_visibility", ""))

    def describe(self) -> dict[str, Any]:
        """The shape of one entry in a ``sys/mounts`` listing."""
        config: dict[str, Any] = {
            "default_lease_ttl": self.config.get("default_lease_ttl", 0),
            "max_lease_ttl": self.config.get("max_lease_ttl", 0),
            "force_no_cache": self.config.get("force_no_cache", False),
        }
        if self.listing_visibility:
            config["listing_visibility"] = self.listing_visibility
        if self.table == "auth":
            config["token_type"] = self.config.get("token_type", "default-service")
        return {
            "type": self.type,
            "description": self.description,
            "accessor": self.accessor,
            "uuid": self.uuid,
            "config": config,
            "options": self.options or None,
            "local": self.local,
            "seal_wrap": self.seal_wrap,
            "external_entropy_access": False,
            "plugin_version": "",
            "running_plugin_version": "",
            "running_sha256": "",
        }

    def with_changes(self, **changes: Any) -> MountEntry:
        return replace(self, **changes)


def new_mount(path: str, type_: str, **kwargs: Any) -> MountEntry:
    prefix = "auth_" if kwargs.get("table") == "auth" else ""
    return MountEntry(
        path=path,
        type=type_,
        uuid=str(uuid.uuid4()),
        accessor=f"{prefix}{type_.replace('-', '_')}_{random_base62(8).lower()}",
        **kwargs,
    )


def normalise_path(path: str) -> str:
    path = path.strip().strip("/")
    if not path:
        raise InvalidRequestError("mount path must not be empty")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise InvalidRequestError(f"invalid mount path {path!r}")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        # A policy path cannot name it (node/policy/parser.py refuses control characters).
        raise InvalidRequestError("invalid mount path: contains a control character")
    return path + "/"
