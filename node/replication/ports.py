"""What replication needs from outside ``node``: the network, as protocols.

Only ``api`` may open sockets with TLS for the server (``api/replication_net.py``
implements :class:`Transport`), so this package holds the protocol-free logic
and talks through :class:`Link`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from node.replication.frames import FrameDecoder, FrameError, encode
from sdk.certs import RaftTLS

__all__ = ["Channel", "Link", "Listening", "Transport"]


class Link(Protocol):
    """One mutual-TLS connection; ``peer_id`` is the common name of the peer's certificate."""

    @property
    def peer_id(self) -> str: ...

    async def send(self, data: bytes) -> None: ...

    async def receive(self) -> bytes:
        """The next bytes (b"" once the peer closed)."""
        ...

    async def close(self) -> None: ...


class Listening(Protocol):
    async def close(self) -> None: ...


class Transport(Protocol):
    async def listen(
        self, address: str, tls: RaftTLS, on_link: Callable[[Link], Awaitable[None]]
    ) -> Listening: ...

    async def dial(self, address: str, tls: RaftTLS, timeout: float) -> Link: ...


class Channel:
    """Messages over a :class:`Link`: frames out, frames in (``frames`` parses)."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self._decoder = FrameDecoder()
        self._ready: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.link.send(encode(message))

    async def receive_within(self, seconds: float) -> dict[str, Any]:
        """:meth:`receive`, or ``TimeoutError`` after ``seconds``.

        ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11 ``wait_for``
        returns the result when a cancellation arrives just as the message did,
        and the session task cancelled by ``stop_active`` went on streaming.
        """
        async with asyncio.timeout(seconds):
            return await self.receive()

    async def receive(self) -> dict[str, Any]:
        while not self._ready:
            data = await self.link.receive()
            if not data:
                raise ConnectionError("the peer closed the replication connection")
            self._ready.extend(self._decoder.feed(data))
        return self._ready.pop(0)

    async def close(self) -> None:
        await self.link.close()


def expect_type(message: dict[str, Any], *types: str) -> str:
    kind = message.get("type")
    if kind not in types:
        raise FrameError(f"unexpected frame {kind!r}")
    return str(kind)
