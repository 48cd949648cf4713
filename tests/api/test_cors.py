"""``sys/config/cors`` and the CORS headers on every answer (issue 14)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from uuid import UUID

from api.listener import SERVER_NAME
from tests.api.helpers import call, dev_call

if TYPE_CHECKING:
    from tests.conftest import DevServer

SITE = "https://ui.example.com"


async def _enable(dev: DevServer, origins: object, headers: object = None) -> None:
    body = {"allowed_origins": origins}
    if headers is not None:
        body["allowed_headers"] = headers
    status, answer = await dev_call(dev, "PUT", "sys/config/cors", body)
    assert status == 204, answer


async def test_config_read_write_delete(dev: DevServer) -> None:
    status, body = await dev_call(dev, "GET", "sys/config/cors")
    assert status == 200, body
    assert body["data"] == {"enabled": False} and body["enabled"] is False
    await _enable(dev, [SITE], "X-Custom")
    body = (await dev_call(dev, "GET", "sys/config/cors"))[1]
    assert body["data"]["enabled"] is True
    assert body["data"]["allowed_origins"] == [SITE]
    headers = body["data"]["allowed_headers"]
    assert "X-Custom" in headers and "X-Vault-Token" in headers and "Content-Type" in headers
    status, answer = await dev_call(dev, "DELETE", "sys/config/cors")
    assert status == 204, answer
    assert (await dev_call(dev, "GET", "sys/config/cors"))[1]["data"] == {"enabled": False}


async def test_config_rejects_bad_input_and_needs_sudo(dev: DevServer) -> None:
    for body in ({}, {"allowed_origins": []}, {"allowed_origins": ["*", SITE]}):
        status, answer = await dev_call(dev, "PUT", "sys/config/cors", body)
        assert status == 400 and answer["errors"], (body, answer)
    status, answer = await dev_call(dev, "GET", "sys/config/cors", token=None)
    assert status in (400, 403) and answer["errors"], answer
    status, created = await dev_call(dev, "POST", "auth/token/create", {"policies": ["default"]})
    token = created["auth"]["client_token"]
    status, answer = await dev_call(
        dev, "PUT", "sys/config/cors", {"allowed_origins": "*"}, token=token
    )
    assert status == 403, answer


async def test_no_headers_while_disabled(dev: DevServer) -> None:
    reply = await call(dev.client, "GET", "/v1/sys/health", headers={"Origin": SITE})
    assert reply.status == 200
    assert "Access-Control-Allow-Origin" not in reply.headers


async def test_headers_on_every_answer_when_enabled(dev: DevServer) -> None:
    await _enable(dev, [SITE])
    for method, path, extra in (
        ("GET", "/v1/sys/health", {}),
        ("GET", "/v1/secret/data/missing", dev.auth),
        ("GET", "/v1/sys/mounts", {}),  # 403 without a token: still readable by the page
        ("GET", "/v1/sys/seal-status", {}),
    ):
        reply = await call(dev.client, method, path, headers={"Origin": SITE, **extra})
        assert reply.headers.get("Access-Control-Allow-Origin") == SITE, str(reply)
        assert "Origin" in reply.headers.getall("Vary"), str(reply)
    # a request without Origin is untouched
    reply = await call(dev.client, "GET", "/v1/sys/health")
    assert "Access-Control-Allow-Origin" not in reply.headers


async def test_disallowed_origin_is_403(dev: DevServer) -> None:
    await _enable(dev, [SITE])
    reply = await call(
        dev.client, "GET", "/v1/sys/health", headers={"Origin": "https://evil.example"}
    )
    assert reply.status == 403
    assert reply.errors == ["origin not allowed"]
    assert "Access-Control-Allow-Origin" not in reply.headers
    _assert_named_like_any_answer(reply.headers)


def _assert_named_like_any_answer(headers: Mapping[str, str]) -> None:
    """CORS answers inside the edge: its own refusals and preflights
    carry the request id and the server's name like every other answer."""
    assert UUID(headers["X-Request-Id"]).version == 4
    assert headers["Server"] == SERVER_NAME


async def test_wildcard_allows_any_origin(dev: DevServer) -> None:
    await _enable(dev, "*")
    reply = await call(dev.client, "GET", "/v1/sys/health", headers={"Origin": "https://a.b"})
    assert reply.status == 200
    assert reply.headers["Access-Control-Allow-Origin"] == "https://a.b"


async def test_preflight(dev: DevServer) -> None:
    await _enable(dev, [SITE], ["X-Custom"])
    reply = await call(
        dev.client,
        "OPTIONS",
        "/v1/secret/data/app",
        headers={"Origin": SITE, "Access-Control-Request-Method": "LIST"},
    )
    assert reply.status == 200, str(reply)
    assert reply.headers["Access-Control-Allow-Origin"] == SITE
    assert set(reply.headers["Access-Control-Allow-Methods"].split(",")) == {
        "DELETE",
        "GET",
        "OPTIONS",
        "POST",
        "PUT",
        "LIST",
    }
    assert "X-Custom" in reply.headers["Access-Control-Allow-Headers"].split(",")
    assert reply.headers["Access-Control-Max-Age"] == "300"
    _assert_named_like_any_answer(reply.headers)
    reply = await call(
        dev.client,
        "OPTIONS",
        "/v1/secret/data/app",
        headers={"Origin": SITE, "Access-Control-Request-Method": "TRACE"},
    )
    assert reply.status == 405 and reply.errors


async def test_config_is_root_namespace_only(dev: DevServer) -> None:
    status, answer = await dev_call(dev, "PUT", "sys/namespaces/team", {})
    assert status in (200, 204), answer
    status, answer = await dev_call(
        dev, "GET", "sys/config/cors", headers={"X-Service-Namespace": "team"}
    )
    assert status == 400 and answer["errors"], answer
