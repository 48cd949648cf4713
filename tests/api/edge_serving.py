"""Serving an app the way ``coffer server`` does (``api.listener.serve``), on loopback,
and a raw-socket client whose bytes and reads are the test's (not a test module)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from api.listener import ListenerLimits
from tests.listener_server import ListenerTestServer


@asynccontextmanager
async def serving(app: web.Application, limits: ListenerLimits) -> AsyncIterator[int]:
    """The port ``app`` listens on (127.0.0.1) with the server's own listener."""
    server = ListenerTestServer(app, limits=limits, host="127.0.0.1")
    await server.start_server()
    try:
        assert server.port is not None
        yield server.port
    finally:
        await server.close()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


async def read_reply(reader: asyncio.StreamReader, timeout: float = 10) -> Reply:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=timeout)
    status_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await asyncio.wait_for(reader.readexactly(length), timeout=timeout) if length else b""
    return Reply(int(status_line.split(" ")[1]), headers, body)


@asynccontextmanager
async def connection(port: int) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):  # the server closed it first
            await writer.wait_closed()


async def send(writer: asyncio.StreamWriter, *chunks: bytes, pause: float = 0.05) -> None:
    """Each chunk in its own write, with a pause so the server reads them apart."""
    for n, chunk in enumerate(chunks):
        if n:
            await asyncio.sleep(pause)
        writer.write(chunk)
        await writer.drain()


def request(method: str, path: str, token: str = "", body: bytes = b"", **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: coffer"]
    if token:
        lines.append(f"X-Vault-Token: {token}")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    if body or method in ("PUT", "POST"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
