"""The server's event loop is uvloop (docs/performance.md: before and after)."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from api import server


async def _loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_the_server_runs_on_uvloop() -> None:
    assert issubclass(server.run_on_server_loop(_loop_type()), uvloop.Loop)


def test_asyncio_stays_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "LOOP_FACTORY", None)
    assert not issubclass(server.run_on_server_loop(_loop_type()), uvloop.Loop)
