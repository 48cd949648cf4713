"""A node that stops being active while it handles a forwarded write: its core
refuses the write (read-only standby), and the edge tells the sending standby to
retry elsewhere (503 + ``X-Coffer-Not-Active``) instead of failing the request."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from node.cluster.role import HAState
from tests.api.test_forwarding_signature import FOR, SIG, ActiveCluster, _read, _write, capture
from tests.conftest import DevServer


@dataclass
class LosingCluster(ActiveCluster):
    """Active when the edge asks first; a standby by the time the core asks."""

    asked: int = 0

    def is_active(self) -> bool:
        self.asked += 1
        return self.asked == 1

    async def state(self) -> HAState:
        return HAState(ha_enabled=True, sealed=False, active=False)


@pytest.fixture
def losing(dev: DevServer) -> LosingCluster:
    cluster = LosingCluster()
    dev.core.cluster = cluster  # type: ignore[assignment]
    return cluster


async def test_a_forwarded_write_is_sent_back_when_leadership_is_lost(
    dev: DevServer, losing: LosingCluster
) -> None:
    request, signature = capture(losing.forward_key, _write(dev, "lost"))
    headers = {FOR: request.client, SIG: signature, "X-Service-Token": request.token}
    url = f"{request.path}?{request.query}"
    resp = await dev.client.request(request.method, url, data=request.body, headers=headers)
    assert resp.status == 503
    assert resp.headers["X-Coffer-Not-Active"] == "1"  # the sender retries elsewhere
    assert (await resp.json())["errors"] == ["this node is not the active node"]
    dev.core.cluster = None
    assert await _read(dev, "lost") == 404  # nothing was applied here
