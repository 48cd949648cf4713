"""The namespace value and the read-only tree view other subsystems depend on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["ROOT", "ROOT_ID", "Namespace", "NamespaceTree"]

ROOT_ID = "root"


@dataclass(frozen=True, slots=True)
class Namespace:
    id: str
    #: "" for root, otherwise ends with "/" ("team-a/", "team-a/dev/").
    path: str
    custom_metadata: dict[str, str] = field(default_factory=dict)

    @property
    def is_root(self) -> bool:
        return self.id == ROOT_ID

    @property
    def storage_prefix(self) -> str:
        return "" if self.is_root else f"namespaces/{self.id}/"

    @property
    def parent_path(self) -> str:
        if self.is_root:
            return ""
        head, _, _ = self.path.rstrip("/").rpartition("/")
        return head + "/" if head else ""

    def contains(self, other: Namespace) -> bool:
        """True when ``other`` is this namespace or below it."""
        return other.path.startswith(self.path)

    def relative(self, other: Namespace) -> str:
        """``other``'s path as seen from here ("" when equal); requires ``contains``."""
        return other.path[len(self.path) :]


ROOT = Namespace(ROOT_ID, "")


class NamespaceTree(Protocol):
    """What identity, policies and tokens need to know about namespaces."""

    def by_id(self, namespace_id: str) -> Namespace | None: ...

    def ancestors(self, namespace_id: str) -> list[Namespace]:
        """Root first, down to and including the namespace itself."""
        ...
