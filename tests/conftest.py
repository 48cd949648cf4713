"""Shared fixtures: an in-process core behind the real aiohttp app.

``COFFER_REQUIRE_ALL=1`` (set by CI) turns every skip for a missing system
dependency into a failure, so CI can never pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, settings

from api.app import create_app
from node.core.core import Core, InitOutput
from node.physical.inmem import InmemBackend
from tests.listener_server import ListenerTestServer

#: Property tests assert behaviour, never speed: Hypothesis's per-example deadline
#: (200 ms) and its too-slow health check would fail them when the parallel stage
#: shares the cores (speed is measured in bench/).
settings.register_profile("coffer", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("coffer")


def require(condition: bool, reason: str) -> None:
    """Skip when a system dependency is missing, or fail under COFFER_REQUIRE_ALL=1."""
    if condition:
        return
    if os.environ.get("COFFER_REQUIRE_ALL") == "1":
        pytest.fail(f"required dependency missing (COFFER_REQUIRE_ALL=1): {reason}")
    pytest.skip(reason)


@dataclass
class DevServer:
    core: Core
    client: TestClient
    init: InitOutput

    @property
    def token(self) -> str:
        return self.init.root_token

    @property
    def auth(self) -> dict[str, str]:
        return {"X-Service-Token": self.init.root_token}


@pytest.fixture
async def fresh_client() -> AsyncIterator[tuple[Core, TestClient]]:
    """An uninitialised core behind the app."""
    core = Core(InmemBackend())
    client = TestClient(ListenerTestServer(create_app(core, max_request_size=1024 * 1024)))
    await client.start_server()
    try:
        yield core, client
    finally:
        await client.close()


@pytest.fixture
async def dev(fresh_client: tuple[Core, TestClient]) -> DevServer:
    """An initialised, unsealed core with a root token, like ``server -dev``."""
    core, client = fresh_client
    return DevServer(core, client, await core.dev_bootstrap())
