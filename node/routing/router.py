"""Longest-prefix routing of request paths to mounted backends."""

from __future__ import annotations

from node.logical.backend import Backend
from node.logical.mount import MountEntry
from node.routing.owners import StorageOwners
from sdk.record import record

__all__ = ["RouteMatch", "Router"]


@record
class RouteMatch:
    """The result of routing: a new value, the request is never mutated."""

    mount: MountEntry
    backend: Backend
    relative_path: str


class Router:
    """Mount points (ending in ``/``) to backends.

    Only the mount table (``node.core.mount_table``) mounts and unmounts, so
    every backend sees one lifecycle; everything else only matches.
    """

    def __init__(self) -> None:
        self._routes: dict[str, tuple[MountEntry, Backend]] = {}
        #: ``storage_owners``' answer until the routes change.
        self._owners: StorageOwners | None = None

    def mount(self, entry: MountEntry, backend: Backend) -> None:
        self._routes[entry.route_path] = (entry, backend)
        self._owners = None

    def unmount(self, path: str) -> Backend | None:
        """Stop routing to ``path``; the backend it had, for its owner to clean up."""
        found = self._routes.pop(path, None)
        self._owners = None
        return found[1] if found is not None else None

    def storage_owners(self) -> StorageOwners:
        """Which backend's storage holds a barrier key, built once per change of the
        routes (each ``storage_prefix`` is a string built on demand)."""
        owners = self._owners
        if owners is None:
            owners = self._owners = StorageOwners(
                (entry.storage_prefix, backend) for entry, backend in self._routes.values()
            )
        return owners

    def entries(self) -> list[MountEntry]:
        return [entry for entry, _ in self._routes.values()]

    def mounted(self) -> list[tuple[MountEntry, Backend]]:
        return list(self._routes.values())

    def match(self, path: str) -> RouteMatch | None:
        probe = path if path.endswith("/") else path + "/"
        best = ""
        for mount_path in self._routes:
            if probe.startswith(mount_path) and len(mount_path) > len(best):
                best = mount_path
        if not best:
            return None
        entry, backend = self._routes[best]
        return RouteMatch(entry, backend, path[len(best) :])
