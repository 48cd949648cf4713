"""A forwarded request's signature (issue 14, item 8), checked by a real app.

The app's core plays the active node of a cluster whose forwarding key the
test knows, so it can build what a standby sends (with the signing function
the standby uses) and then replay it, alter each covered field, or age it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from node.cluster.relay import NonceLedger, Relayed, body_digest, sign_relayed
from tests.conftest import DevServer

FOR = "X-Coffer-Forwarded-For"
SIG = "X-Coffer-Forwarded-Signature"


@dataclass
class ActiveCluster:
    """What forwarding asks of the cluster, for a node that is active."""

    forward_key: bytes = field(default_factory=lambda: os.urandom(32))
    relay_nonces: NonceLedger = field(default_factory=NonceLedger)
    replica: Any = None
    http: Any = None

    def is_active(self) -> bool:
        return True

    async def close(self) -> None:
        return None


@pytest.fixture
def active(dev: DevServer) -> ActiveCluster:
    cluster = ActiveCluster()
    dev.core.cluster = cluster  # type: ignore[assignment]
    return cluster


@dataclass(frozen=True)
class Captured:
    """A forwarded request as it travels: its parts and its headers."""

    method: str
    path: str
    query: str
    body: bytes
    token: str
    namespace: str = ""
    client: str = "127.0.0.9"

    def fields(self) -> Relayed:
        return Relayed(
            client=self.client,
            method=self.method,
            path=self.path,
            query=self.query,
            body_sha256=body_digest(self.body),
            token=self.token,
            namespace=self.namespace,
        )


def capture(key: bytes, request: Captured, **sign: Any) -> tuple[Captured, str]:
    return request, sign_relayed(key, request.fields(), **sign)


async def send(dev: DevServer, request: Captured, signature: str) -> tuple[int, dict[str, Any]]:
    headers = {FOR: request.client, SIG: signature, "Content-Type": "application/json"}
    if request.token:
        headers["X-Service-Token"] = request.token
    if request.namespace:
        headers["X-Service-Namespace"] = request.namespace
    url = request.path + (f"?{request.query}" if request.query else "")
    resp = await dev.client.request(request.method, url, data=request.body, headers=headers)
    text = await resp.text()
    return resp.status, (json.loads(text) if text else {})


def _write(dev: DevServer, key: str = "a") -> Captured:
    return Captured(
        method="PUT",
        path=f"/v1/cubbyhole/{key}",
        query="x=1",
        body=json.dumps({"v": "1"}).encode(),
        token=dev.token,
    )


async def _read(dev: DevServer, key: str) -> int:
    resp = await dev.client.get(f"/v1/cubbyhole/{key}", headers=dev.auth)
    return resp.status


async def test_a_genuine_forwarded_request_works_once(
    dev: DevServer, active: ActiveCluster
) -> None:
    request, signature = capture(active.forward_key, _write(dev))
    status, _ = await send(dev, request, signature)
    assert status == 204
    assert await _read(dev, "a") == 200
    # The same bytes again: a replay.
    status, body = await send(dev, request, signature)
    assert status == 403
    assert body["errors"] == ["forwarded request refused: forwarded request replayed"]


@pytest.mark.parametrize(
    "change",
    [
        {"client": "127.0.0.10"},
        {"method": "POST"},
        {"path": "/v1/cubbyhole/elsewhere"},
        {"query": "x=2"},
        {"body": json.dumps({"v": "2"}).encode()},
        {"token": "hvs.not-the-signed-token"},
        {"namespace": "other"},
    ],
    ids=lambda change: next(iter(change)),
)
async def test_altering_a_covered_field_is_refused(
    dev: DevServer, active: ActiveCluster, change: dict[str, Any]
) -> None:
    original, signature = capture(active.forward_key, _write(dev, "b"))
    altered = replace(original, **change)
    status, body = await send(dev, altered, signature)
    assert status == 403, body
    assert body["errors"] == [
        "forwarded request refused: forwarding signature does not match the request"
    ]
    assert await _read(dev, "b") == 404  # nothing was written
    assert await _read(dev, "elsewhere") == 404


async def test_altering_the_signed_timestamp_or_nonce_is_refused(
    dev: DevServer, active: ActiveCluster
) -> None:
    request, signature = capture(active.forward_key, _write(dev, "c"))
    version, stamp, nonce, mac = signature.split(".")
    for forged in (
        f"{version}.{int(stamp) + 1}.{nonce}.{mac}",
        f"{version}.{stamp}.{'0' * len(nonce)}.{mac}",
        f"{version}.{stamp}.{nonce}.{'0' * len(mac)}",
    ):
        status, _ = await send(dev, request, forged)
        assert status == 403
    assert await _read(dev, "c") == 404


@pytest.mark.parametrize("offset", [-120.0, 120.0])
async def test_a_stale_timestamp_is_refused(
    dev: DevServer, active: ActiveCluster, offset: float
) -> None:
    request, signature = capture(active.forward_key, _write(dev, "d"), now=time.time() + offset)
    status, body = await send(dev, request, signature)
    assert status == 403 and body["errors"] == [
        "forwarded request refused: stale forwarding timestamp"
    ]
    assert await _read(dev, "d") == 404


async def test_another_key_or_a_malformed_signature_is_refused(
    dev: DevServer, active: ActiveCluster
) -> None:
    request, signature = capture(os.urandom(32), _write(dev, "e"))
    for bad in (signature, "1.ab", "", "v1.1.2"):
        status, body = await send(dev, request, bad)
        assert status == 403 and body["errors"][0].startswith("forwarded request refused"), bad
    assert await _read(dev, "e") == 404


async def test_a_request_without_forwarding_headers_is_served(
    dev: DevServer, active: ActiveCluster
) -> None:
    resp = await dev.client.put("/v1/cubbyhole/f", json={"v": "1"}, headers=dev.auth)
    assert resp.status == 204
    assert len(active.relay_nonces) == 0
