"""aiohttp's ``TestServer``, serving through Coffer's own listener (``api.listener.serve``)
as ``coffer server`` does, so in-process tests see the same connection handling:
the method tunnel that carries ``LIST`` past aiohttp's C parser, the deadlines and
JSON refusals. aiohttp's own ``TestServer`` serves with its plain request handler."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from yarl import URL

from api.listener import ListenerLimits, serve

__all__ = ["ListenerTestServer"]


class ListenerTestServer(TestServer):
    def __init__(
        self, app: web.Application, *, limits: ListenerLimits | None = None, **kwargs: Any
    ) -> None:
        super().__init__(app, **kwargs)
        self._limits = limits or ListenerLimits()
        self._listener: asyncio.Server | None = None
        self._base: URL | None = None

    async def start_server(
        self, loop: asyncio.AbstractEventLoop | None = None, **kwargs: Any
    ) -> None:
        if self.runner:
            return
        self.runner = await self._make_runner(**kwargs)
        await self.runner.setup()
        assert isinstance(self.runner, web.AppRunner)
        self._listener = await serve(self.runner, self.host, self.port or 0, self._limits)
        self.port = int(self._listener.sockets[0].getsockname()[1])
        self.scheme = "http"
        self._base = URL(f"http://{self.host}:{self.port}")

    def make_url(self, path: Any) -> URL:
        assert self._base is not None, "the server is not started"
        return self._base.join(URL(path))

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        await super().close()
        if listener is not None:
            await listener.wait_closed()
