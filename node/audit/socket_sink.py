"""The ``socket`` device: lines to a TCP, UDP or unix stream socket.

A stream connection is made on first use and kept. A peer that closed it
(end of stream seen) or a write that fails or outlasts ``write_timeout``
drops the connection; the line is tried once more on a fresh one, and if
that fails too the write fails. The next write reconnects, so a listener
that comes back is used again.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

__all__ = ["SocketSink"]


class SocketSink:
    def __init__(self, address: str, socket_type: str = "tcp", timeout: float = 2.0) -> None:
        self.address = address
        self.socket_type = socket_type
        self.timeout = timeout
        self._stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()

    async def check(self) -> None:
        """Nothing: as in the reference, a listener that is not up yet is no reason to refuse."""

    async def write(self, line: bytes) -> None:
        async with self._lock, asyncio.timeout(self.timeout * 2):
            if self.socket_type == "udp":
                await self._send_datagram(line)
                return
            try:
                await self._send(line)
            except (OSError, TimeoutError):
                await self._drop()
                await self._send(line)

    def reopen(self) -> None:
        """Sockets have nothing to rotate."""

    async def close(self) -> None:
        async with self._lock:
            await self._drop()

    async def _send(self, line: bytes) -> None:
        if self._stream is not None and (self._stream[0].at_eof() or self._stream[1].is_closing()):
            await self._drop()
        if self._stream is None:
            async with asyncio.timeout(self.timeout):
                self._stream = await self._connect()
        writer = self._stream[1]
        try:
            writer.write(line)
            async with asyncio.timeout(self.timeout):
                await writer.drain()
        except BaseException:
            await self._drop()
            raise

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.socket_type == "unix":
            return await asyncio.open_unix_connection(self.address)
        host, _, port = self.address.rpartition(":")
        return await asyncio.open_connection(host.strip("[]") or "127.0.0.1", int(port))

    async def _send_datagram(self, line: bytes) -> None:
        host, _, port = self.address.rpartition(":")
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_DGRAM)
        family, type_, proto, _, target = infos[0]
        with socket.socket(family, type_, proto) as sock:
            sock.setblocking(False)
            await loop.sock_sendto(sock, line, target)

    async def _drop(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream[1].close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.timeout):
                    await stream[1].wait_closed()
