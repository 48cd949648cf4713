"""Fixtures of the HTTP API tests: a core with several key shares, sealed or unsealed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from aiohttp.test_utils import TestClient

from node.core.core import Core, InitOutput
from tests.api.helpers import unseal_with

SHARES = 5
THRESHOLD = 3


@dataclass
class Shamir:
    """A core initialised with ``SHARES`` key shares, any ``THRESHOLD`` of which unseal it."""

    core: Core
    client: TestClient
    init: InitOutput

    @property
    def keys(self) -> list[str]:
        return self.init.keys_hex

    @property
    def auth(self) -> dict[str, str]:
        return {"X-Vault-Token": self.init.root_token}


@pytest.fixture
async def shamir(fresh_client: tuple[Core, TestClient]) -> Shamir:
    """Initialised (5 shares, threshold 3) and still sealed."""
    core, client = fresh_client
    return Shamir(core, client, await core.initialize(SHARES, THRESHOLD))


@pytest.fixture
async def unsealed(shamir: Shamir) -> Shamir:
    """The ``shamir`` core, unsealed over HTTP with the first three shares."""
    status = (await unseal_with(shamir.client, shamir.keys[:THRESHOLD])).body
    assert status["sealed"] is False
    return shamir
