"""What a mounted backend may know of the node it runs on (Vault's ``logical.SystemView``).

Backends get this narrow, typed view instead of the core: their storage
(scoped to the mount), the mount's entry, the TTL limits that apply to it,
the node's role, a logger, and the few capabilities a method really uses.
The core implements it (``node.core.system_view``); a test builds one from
plain values, so a backend runs without a core.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from node.barrier.view import BarrierView
from node.logical.mount import MountEntry
from node.namespaces.model import NamespaceTree
from node.outbound import HttpClient

__all__ = ["BackendConfig", "SystemView"]


class SystemView(Protocol):
    """The node as one mount sees it; every answer is read at call time."""

    def default_lease_ttl(self) -> int:
        """Seconds: the mount's tuned default, else the system's."""
        ...

    def max_lease_ttl(self) -> int:
        """Seconds: the mount's tuned maximum, else the system's."""
        ...

    def is_standby(self) -> bool:
        """Not the active node (a standby or a performance standby): storage is read-only."""
        ...

    def is_perf_standby(self) -> bool:
        """A standby that serves reads itself rather than forwarding them."""
        ...

    def local_mount(self) -> bool:
        """The mount's data stays on this cluster (never replicated to another)."""
        ...

    def http_client(self) -> HttpClient | None:
        """Outgoing HTTP for methods that call a third party; ``None`` until the server sets it."""
        ...

    def namespaces(self) -> NamespaceTree:
        """The namespace tree (identity resolves parents with it)."""
        ...

    def mounts(self) -> list[MountEntry]:
        """Every mount of the node now (identity checks alias mount accessors)."""
        ...


@dataclass(frozen=True, slots=True)
class BackendConfig:
    """Everything a backend factory is given."""

    #: The mount's own storage: ``logical/<uuid>/`` or ``auth/<uuid>/`` (per namespace).
    storage: BarrierView
    #: Where it is mounted, its options and tuning.
    mount: MountEntry
    system: SystemView
    logger: logging.Logger
