"""The core's implementation of the system view one mount is given.

One per mount, like the reference's ``dynamicSystemView``: TTL answers
include the mount's tuning, and every answer is read at call time (a node's
role and its HTTP client change while the backend lives).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.logical.mount import MountEntry
from node.namespaces.model import NamespaceTree
from node.outbound import HttpClient

if TYPE_CHECKING:
    from node.core.core import Core

__all__ = ["CoreSystemView"]


class CoreSystemView:
    def __init__(self, core: Core, mount: MountEntry) -> None:
        self._core = core
        self._mount = mount

    def default_lease_ttl(self) -> int:
        tuned = int(self._mount.config.get("default_lease_ttl") or 0)
        return min(tuned or self._core.settings.default_lease_ttl, self.max_lease_ttl())

    def max_lease_ttl(self) -> int:
        tuned = int(self._mount.config.get("max_lease_ttl") or 0)
        return tuned or self._core.settings.max_lease_ttl

    def is_standby(self) -> bool:
        return self._core.is_standby

    def is_perf_standby(self) -> bool:
        cluster = self._core.cluster
        return cluster is not None and self.is_standby() and cluster.settings.performance_standby

    def local_mount(self) -> bool:
        return self._mount.local

    def http_client(self) -> HttpClient | None:
        return self._core.http_client

    def namespaces(self) -> NamespaceTree:
        return self._core.namespaces

    def mounts(self) -> list[MountEntry]:
        return self._core.router.entries()
