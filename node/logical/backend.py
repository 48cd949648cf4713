"""The protocol every secrets engine and auth method implements."""

from __future__ import annotations

from typing import Protocol

from node.logical.request import Request
from node.logical.response import Response

__all__ = ["Backend"]


class Backend(Protocol):
    """A mounted engine. ``request.path`` is relative to the mount point."""

    type: str

    async def handle(self, request: Request) -> Response | None: ...

    async def exists(self, request: Request) -> bool:
        """Whether the target already exists: decides create vs update for ACLs."""
        ...

    def is_unauthenticated(self, path: str) -> bool: ...

    def needs_sudo(self, path: str) -> bool: ...

    def help(self, request: Request) -> Response: ...
