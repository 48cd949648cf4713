"""An in-process core under the PKCS#11 seal behind the HTTP app (not a test module)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp.test_utils import TestClient

from node.config.model import SealStanza
from node.core.core import Core, CoreSettings
from node.physical.inmem import InmemBackend
from tests.api.helpers import Reply, call
from tests.hsm.softhsm import SoftHsm


@dataclass
class HsmNode:
    core: Core
    client: TestClient[Any, Any]
    physical: InmemBackend


def hsm_core(physical: InmemBackend, softhsm: SoftHsm, token: str, **extra: str) -> Core:
    stanza = SealStanza("pkcs11", softhsm.options(token, **extra))
    return Core(physical, CoreSettings(seal=stanza))


async def init(node: HsmNode, body: dict[str, Any]) -> Reply:
    return await call(node.client, "PUT", "/v1/sys/init", json_body=body)


async def seal_status(node: HsmNode) -> dict[str, Any]:
    reply = await call(node.client, "GET", "/v1/sys/seal-status")
    assert reply.status == 200, str(reply)
    body: dict[str, Any] = reply.body
    return body
