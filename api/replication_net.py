"""The replication network: mutual TLS over asyncio streams (``node.replication.ports``).

``node/replication`` decides what is sent; this module only moves bytes. Both
sides present a certificate issued by the primary's replication CA (the
secondary's comes in its activation bundle) and require one from the peer;
the peer's id is its certificate's common name.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from consensus.pki import tls_contexts
from node.replication.ports import Link
from sdk.certs import RaftTLS, certificate_node_id

__all__ = ["StreamLink", "StreamTransport"]

_READ = 256 * 1024


def _contexts(tls: RaftTLS) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) contexts; ``ssl`` loads a key only from a file, so it passes
    through a private temporary directory (encrypted under a one-time password)."""
    directory = Path(tempfile.mkdtemp(prefix="coffer-replication-"))
    try:
        return tls_contexts(tls, directory / "tls")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _peer_id(writer: asyncio.StreamWriter) -> str:
    ssl_object = writer.get_extra_info("ssl_object")
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ""
    pem = ssl.DER_cert_to_PEM_cert(der).encode()
    try:
        return certificate_node_id(pem)
    except ValueError:
        return ""


class StreamLink:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._peer = _peer_id(writer)

    @property
    def peer_id(self) -> str:
        return self._peer

    async def send(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def receive(self) -> bytes:
        return await self._reader.read(_READ)

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


class _Server:
    def __init__(self, server: asyncio.Server, tasks: set[asyncio.Task[None]]) -> None:
        self._server = server
        self._tasks = tasks

    async def close(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._server.wait_closed()


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


class StreamTransport:
    async def listen(
        self, address: str, tls: RaftTLS, on_link: Callable[[Link], Awaitable[None]]
    ) -> _Server:
        server_context, _ = await asyncio.to_thread(_contexts, tls)
        tasks: set[asyncio.Task[None]] = set()

        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            tasks.add(task)
            try:
                await on_link(StreamLink(reader, writer))
            finally:
                tasks.discard(task)
                writer.close()

        host, port = _split(address)
        server = await asyncio.start_server(accepted, host, port, ssl=server_context)
        return _Server(server, tasks)

    async def dial(self, address: str, tls: RaftTLS, timeout: float) -> StreamLink:
        _, client_context = await asyncio.to_thread(_contexts, tls)
        host, port = _split(address)
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(
                host, port, ssl=client_context, server_hostname=host
            )
        return StreamLink(reader, writer)
