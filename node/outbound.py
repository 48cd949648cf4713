"""The outgoing-HTTP protocol the core uses to call third parties.

``node`` must not import aiohttp, so auth methods that call an external
service (the identity provider) depend on this protocol; ``api.outbound``
implements it and the server hands the implementation to the core.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["DEFAULT_TIMEOUT", "HttpClient", "HttpReply", "OutboundError"]

#: Seconds a whole call (connect, send, read the body) may take by default.
DEFAULT_TIMEOUT = 10.0


class OutboundError(Exception):
    """The call produced no usable reply: connection refused or reset, timeout,
    TLS failure, or a body larger than the client accepts."""


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A complete reply. Header names are lower-case; repeated headers are
    joined with ``", "`` (as RFC 9110 allows for list-valued headers such as
    ``Link``)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    def header(self, name: str) -> str:
        """The header's value, or ``""`` when absent (case-insensitive)."""
        return self.headers.get(name.lower(), "")


@runtime_checkable
class HttpClient(Protocol):
    """One request at a time; redirects are returned, never followed."""

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> HttpReply:
        """Send ``json`` (if not ``None``) as the body; raise ``OutboundError``
        when no complete reply arrives within ``timeout`` seconds."""
        ...

    async def close(self) -> None: ...
