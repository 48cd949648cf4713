"""Small helpers shared by the HTTP API tests (not a test module)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp.test_utils import TestClient
from multidict import CIMultiDictProxy

from node.physical.inmem import InmemBackend
from sdk.physical import Entry, TxnOp

if TYPE_CHECKING:
    from tests.conftest import DevServer

#: ``token=ROOT`` for ``dev_call``: the dev server's root token.
ROOT = "<root>"

ENVELOPE_KEYS = {
    "request_id",
    "lease_id",
    "renewable",
    "lease_duration",
    "data",
    "wrap_info",
    "warnings",
    "auth",
}


@dataclass
class Reply:
    """One HTTP response, read completely."""

    method: str
    path: str
    status: int
    headers: CIMultiDictProxy[str]
    raw: bytes

    @property
    def body(self) -> Any:
        """The body parsed as JSON (``None`` when empty)."""
        return json.loads(self.raw) if self.raw else None

    @property
    def errors(self) -> list[str]:
        body = self.body
        assert isinstance(body, dict), f"{self}: body is not a JSON object"
        errors = body.get("errors")
        assert isinstance(errors, list), f"{self}: no 'errors' list in {body!r}"
        assert all(isinstance(e, str) for e in errors), f"{self}: non-string errors {errors!r}"
        return errors

    @property
    def data(self) -> Any:
        return self.body["data"]

    def __str__(self) -> str:
        return f"{self.method} {self.path} -> {self.status} {self.raw[:300]!r}"


async def call(
    client: TestClient,
    method: str,
    path: str,
    *,
    json_body: Any = None,
    data: bytes | str | None = None,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> Reply:
    """Send one request; ``json_body`` is serialised, ``data`` is sent as given."""
    body: Any = data
    send_headers = dict(headers or {})
    if json_body is not None:
        body = json.dumps(json_body)
        send_headers.setdefault("Content-Type", "application/json")
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    if body is not None and len(body) > 1024 * 1024:
        body = io.BytesIO(body)  # aiohttp warns about large raw bytes bodies
    async with client.request(
        method, path, data=body, headers=send_headers, params=params
    ) as response:
        raw = await response.read()
        return Reply(method, path, response.status, response.headers, raw)


async def dev_call(
    dev: DevServer,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = ROOT,
    *,
    wrap: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """``/v1/<path>`` with ``token`` (none when empty); the status and JSON body ({} if empty)."""
    sent = dict(headers or {})
    if token == ROOT:
        sent.update(dev.auth)
    elif token:
        sent["X-Service-Token"] = token
    if wrap is not None:
        sent["X-Service-Wrap-TTL"] = wrap
    resp = await dev.client.request(method, f"/v1/{path}", json=body, headers=sent)
    text = await resp.text()
    return resp.status, (json.loads(text) if text else {})


async def token_with(dev: DevServer, **policies: str) -> str:
    """A fresh token holding the given ``name=text`` policies (plus default)."""
    for name, text in policies.items():
        status, body = await dev_call(dev, "PUT", f"sys/policies/acl/{name}", {"policy": text})
        assert status == 204, body
    status, body = await dev_call(dev, "POST", "auth/token/create", {"policies": list(policies)})
    assert status == 200, body
    token: str = body["auth"]["client_token"]
    return token


def assert_error(reply: Reply, status: int, fragment: str = "") -> list[str]:
    """``reply`` has ``status`` and an ``errors`` list (one message containing ``fragment``)."""
    assert reply.status == status, str(reply)
    errors = reply.errors
    if fragment:
        assert any(fragment.lower() in e.lower() for e in errors), f"{fragment!r} not in {errors}"
    return errors


def assert_envelope(reply: Reply, status: int = 200) -> dict[str, Any]:
    """``reply`` is ``status`` with the full response envelope; returns the body."""
    assert reply.status == status, str(reply)
    body = reply.body
    assert isinstance(body, dict), str(reply)
    missing = ENVELOPE_KEYS - set(body)
    assert not missing, f"{reply}: envelope lacks {sorted(missing)}"
    assert body["request_id"] == reply.headers["X-Request-Id"]
    return body


async def unseal_with(client: TestClient, keys: list[str]) -> Reply:
    """Submit ``keys`` one by one; returns the last seal status reply."""
    reply: Reply | None = None
    for key in keys:
        reply = await call(client, "PUT", "/v1/sys/unseal", json_body={"key": key})
        assert reply.status == 200, str(reply)
    assert reply is not None
    return reply


class YieldingBackend(InmemBackend):
    """In-memory storage that yields to the event loop on every call, as real storage
    does, so concurrent requests interleave at every storage access."""

    async def get(self, key: str) -> Entry | None:
        await asyncio.sleep(0)
        return await super().get(key)

    async def put(self, key: str, value: bytes) -> int:
        await asyncio.sleep(0)
        return await super().put(key, value)

    async def delete(self, key: str) -> None:
        await asyncio.sleep(0)
        await super().delete(key)

    async def list(self, prefix: str) -> list[str]:
        await asyncio.sleep(0)
        return await super().list(prefix)

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        await asyncio.sleep(0)
        return await super().commit(ops)
