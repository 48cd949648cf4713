"""Fixtures of the PKCS#11 seal's tests: a SoftHSM2 token directory per test.

Without SoftHSM2 the tests skip, or fail under ``COFFER_REQUIRE_ALL=1`` (CI,
where ``.ci/run`` installs the Debian ``softhsm2`` package).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from api.app import create_app
from node.physical.inmem import InmemBackend
from tests.conftest import require
from tests.hsm.nodes import HsmNode, hsm_core
from tests.hsm.softhsm import SoftHsm, available, find_library
from tests.integration.conftest import coffer  # noqa: F401 (the real-server fixture)
from tests.listener_server import ListenerTestServer


@pytest.fixture
def softhsm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SoftHsm:
    require(available(), "SoftHSM2 (Debian package softhsm2) is not installed")
    lib = find_library()
    assert lib is not None
    hsm = SoftHsm(tmp_path / "softhsm", lib)
    hsm.write_conf()
    # Read by the library in this process and inherited by server processes.
    monkeypatch.setenv("SOFTHSM2_CONF", str(hsm.conf))
    return hsm


@pytest.fixture
async def node(softhsm: SoftHsm) -> AsyncIterator[HsmNode]:
    physical = InmemBackend()
    core = hsm_core(physical, softhsm, softhsm.init_token())
    client = TestClient(ListenerTestServer(create_app(core, max_request_size=1024 * 1024)))
    await client.start_server()
    try:
        yield HsmNode(core, client, physical)
    finally:
        await client.close()
