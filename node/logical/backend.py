"""The protocol every secrets engine and auth method implements, and its factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from node.logical.request import Request
from node.logical.response import Response
from node.logical.system_view import BackendConfig

__all__ = ["Backend", "Factory"]


class Backend(Protocol):
    """A mounted engine. ``request.path`` is relative to the mount point.

    The lifecycle, driven by the mount table (``node.core.mount_table``):
    ``setup`` right after the factory built it, ``initialize`` once it is
    routed, ``invalidate`` when a replicated write changed a key under its
    storage, ``cleanup`` when it is unmounted, replaced or the node seals.
    """

    type: str
    #: Storage keys (relative to the mount) seal-wrapped under an HSM seal even when
    #: the mount's ``seal_wrap`` is off: an exact key, a prefix ending in ``/``, or
    #: ``*`` (the reference's ``PathsSpecial.SealWrapStorage``).
    seal_wrap_storage: tuple[str, ...]

    async def handle(self, request: Request) -> Response | None: ...

    async def exists(self, request: Request) -> bool:
        """Whether the target already exists: decides create vs update for ACLs."""
        ...

    def is_unauthenticated(self, path: str) -> bool: ...

    def needs_sudo(self, path: str) -> bool: ...

    def help(self, request: Request) -> Response: ...

    def setup(self, config: BackendConfig) -> None:
        """Take the config (system view, logger) before the first request; no I/O."""
        ...

    async def initialize(self) -> None:
        """Work that needs storage, once the backend is mounted. It runs on every
        node that mounts it (standbys too): a write here checks ``is_standby()``."""
        ...

    def invalidate(self, key: str) -> None:
        """Another node changed ``key`` (relative to the mount's storage; "" for
        anything): drop what is cached about it."""
        ...

    async def cleanup(self) -> None:
        """The backend is no longer routed: stop its work, drop its caches."""
        ...


#: The one way a backend type is built: from its config, without I/O.
Factory = Callable[[BackendConfig], Backend]
