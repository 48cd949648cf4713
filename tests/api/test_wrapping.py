"""Response wrapping over HTTP: wrap_info, unwrap (by body and by header),
single use under concurrency, wrap/lookup/rewrap, TTL header forms and expiry."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer

INVALID = "wrapping token is not valid or does not exist"


def assert_invalid(status: int, body: dict[str, Any]) -> None:
    assert status == 400, body
    assert body["errors"] == [INVALID], body


async def put_secret(dev: DevServer) -> None:
    status, body = await call(dev, "POST", "secret/data/app", {"data": {"password": "s3cret"}})
    assert status == 200, body


async def wrapped_read(dev: DevServer, ttl: str = "5m") -> dict[str, Any]:
    status, body = await call(dev, "GET", "secret/data/app", wrap=ttl)
    assert status == 200, body
    info: dict[str, Any] = body["wrap_info"]
    return info


async def default_token(dev: DevServer) -> str:
    status, body = await call(dev, "POST", "auth/token/create", {"policies": ["default"]})
    assert status == 200, body
    token: str = body["auth"]["client_token"]
    return token


async def test_wrapped_kv_read_and_unwrap_by_body(dev: DevServer) -> None:
    await put_secret(dev)
    status, body = await call(dev, "GET", "secret/data/app", wrap="300")
    assert status == 200, body
    assert body["data"] is None
    info = body["wrap_info"]
    assert {"token", "accessor", "ttl", "creation_time", "creation_path"} <= set(info)
    assert info["ttl"] == 300
    assert info["creation_path"] == "secret/data/app"
    created = datetime.fromisoformat(info["creation_time"].replace("Z", "+00:00"))
    assert abs(created.timestamp() - time.time()) < 60
    assert info["token"] != dev.token and info["accessor"]

    # the wrapping token itself: response-wrapping policy, one use, TTL = wrap TTL
    status, looked = await call(
        dev, "POST", "auth/token/lookup-accessor", {"accessor": info["accessor"]}
    )
    assert status == 200, looked
    assert looked["data"]["policies"] == ["response-wrapping"]
    assert looked["data"]["num_uses"] == 1
    assert looked["data"]["explicit_max_ttl"] == 300
    assert looked["data"]["renewable"] is False

    caller = await default_token(dev)
    status, body = await call(
        dev, "POST", "sys/wrapping/unwrap", {"token": info["token"]}, token=caller
    )
    assert status == 200, body
    assert body["data"]["data"] == {"password": "s3cret"}
    assert body["data"]["metadata"]["version"] == 1
    assert body["wrap_info"] is None

    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": info["token"]})
    assert_invalid(status, body)
    assert await dev.core.tokens.lookup(info["token"]) is None


async def test_unwrap_with_the_wrapping_token_as_client_token(dev: DevServer) -> None:
    await put_secret(dev)
    info = await wrapped_read(dev)
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {}, token=info["token"])
    assert status == 200, body
    assert body["data"]["data"] == {"password": "s3cret"}
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {}, token=info["token"])
    assert_invalid(status, body)
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {}, token=None)
    assert status == 403 and body["errors"] == ["permission denied"], body


async def test_wrapping_token_grants_nothing_else(dev: DevServer) -> None:
    await put_secret(dev)
    info = await wrapped_read(dev)
    status, body = await call(dev, "GET", "secret/data/app", token=info["token"])
    assert status == 403 and body["errors"] == ["permission denied"], body
    status, body = await call(dev, "POST", "auth/token/create", {}, token=info["token"])
    assert status == 403, body


async def test_unwrap_needs_a_token_in_body_or_header(dev: DevServer) -> None:
    caller = await default_token(dev)
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {}, token=caller)
    assert_invalid(status, body)
    for bad in ("hvs.nope000000000000000000", caller, dev.token):
        status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": bad})
        assert_invalid(status, body)
    # a normal token is not a wrapping token, and is left alone
    status, _ = await call(dev, "GET", "auth/token/lookup-self", token=caller)
    assert status == 200
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": 42})
    assert_invalid(status, body)
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": ["x"]})
    assert status == 400 and body["errors"], body


@pytest.mark.parametrize("by_header", [False, True])
async def test_concurrent_unwraps_have_exactly_one_winner(dev: DevServer, by_header: bool) -> None:
    await put_secret(dev)
    info = await wrapped_read(dev)
    if by_header:
        attempts = [
            call(dev, "POST", "sys/wrapping/unwrap", {}, token=info["token"]) for _ in range(10)
        ]
    else:
        attempts = [
            call(dev, "POST", "sys/wrapping/unwrap", {"token": info["token"]}) for _ in range(10)
        ]
    results = await asyncio.gather(*attempts)
    winners = [body for status, body in results if status == 200]
    assert len(winners) == 1, results
    assert winners[0]["data"]["data"] == {"password": "s3cret"}
    for status, body in results:
        if status != 200:
            assert_invalid(status, body)


async def test_wrapped_token_creation(dev: DevServer) -> None:
    status, body = await call(
        dev, "POST", "auth/token/create", {"policies": ["web"], "ttl": "1h"}, wrap="2m"
    )
    assert status == 200, body
    assert body["auth"] is None and body["data"] is None
    info = body["wrap_info"]
    assert info["ttl"] == 120
    assert info["creation_path"] == "auth/token/create"
    assert info["wrapped_accessor"]
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": info["token"]})
    assert status == 200, body
    auth = body["auth"]
    assert auth["accessor"] == info["wrapped_accessor"]
    assert auth["policies"] == ["default", "web"]
    assert auth["lease_duration"] == 3600
    status, body = await call(dev, "GET", "auth/token/lookup-self", token=auth["client_token"])
    assert status == 200 and body["data"]["policies"] == ["default", "web"], body


async def test_sys_wrapping_wrap_round_trips_any_json(dev: DevServer) -> None:
    payload = {"s": "text", "n": 1.5, "list": [1, "two", None], "nested": {"ok": True}}
    caller = await default_token(dev)
    status, body = await call(dev, "POST", "sys/wrapping/wrap", payload, token=caller)
    assert status == 400, body
    assert "requires response wrapping" in body["errors"][0]

    status, body = await call(dev, "POST", "sys/wrapping/wrap", payload, token=caller, wrap="1m")
    assert status == 200, body
    info = body["wrap_info"]
    assert info["creation_path"] == "sys/wrapping/wrap" and info["ttl"] == 60
    assert body["data"] is None

    status, body = await call(
        dev, "POST", "sys/wrapping/lookup", {"token": info["token"]}, token=None
    )
    assert status == 200, body
    assert body["data"]["creation_path"] == "sys/wrapping/wrap"
    assert body["data"]["creation_ttl"] == 60
    assert isinstance(body["data"]["creation_time"], str)
    # lookup does not spend the token
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": info["token"]})
    assert status == 200 and body["data"] == payload, body


async def test_wrapping_lookup_rejects_bad_tokens(dev: DevServer) -> None:
    status, body = await call(
        dev, "POST", "sys/wrapping/lookup", {"token": "hvs.nope000000000000000000"}, token=None
    )
    assert_invalid(status, body)
    status, body = await call(dev, "POST", "sys/wrapping/lookup", {}, token=None)
    assert_invalid(status, body)
    status, body = await call(dev, "POST", "sys/wrapping/lookup", {"token": dev.token}, token=None)
    assert_invalid(status, body)


async def test_rewrap(dev: DevServer) -> None:
    await put_secret(dev)
    old = await wrapped_read(dev, "10m")
    status, body = await call(dev, "POST", "sys/wrapping/rewrap", {"token": old["token"]})
    assert status == 200, body
    new = body["wrap_info"]
    assert new["token"] != old["token"]
    assert new["ttl"] == 600
    assert new["creation_path"] == "secret/data/app"
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": old["token"]})
    assert_invalid(status, body)
    status, body = await call(dev, "POST", "sys/wrapping/rewrap", {"token": old["token"]})
    assert_invalid(status, body)
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": new["token"]})
    assert status == 200 and body["data"]["data"] == {"password": "s3cret"}, body


async def test_rewrap_is_not_in_the_default_policy(dev: DevServer) -> None:
    await put_secret(dev)
    info = await wrapped_read(dev)
    caller = await default_token(dev)
    status, body = await call(
        dev, "POST", "sys/wrapping/rewrap", {"token": info["token"]}, token=caller
    )
    assert status == 403, body
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": info["token"]})
    assert status == 200, body


@pytest.mark.parametrize("ttl", ["-1", "-5m", "soon", "1x"])
async def test_bad_wrap_ttl_is_400(dev: DevServer, ttl: str) -> None:
    await put_secret(dev)
    before = len(await dev.core.tokens.all_entries())
    status, body = await call(dev, "GET", "secret/data/app", wrap=ttl)
    assert status == 400 and body["errors"], body
    assert len(await dev.core.tokens.all_entries()) == before


async def test_wrap_ttl_is_capped_by_the_system_max(dev: DevServer) -> None:
    await put_secret(dev)
    # The longest a Go duration holds (longer is a 400: tests/api/test_input_bounds.py).
    info = await wrapped_read(dev, "9223372036")
    assert info["ttl"] == dev.core.settings.max_lease_ttl
    status, body = await call(
        dev, "POST", "auth/token/lookup-accessor", {"accessor": info["accessor"]}
    )
    assert status == 200, body
    assert body["data"]["explicit_max_ttl"] == dev.core.settings.max_lease_ttl
    status, body = await call(dev, "POST", "sys/wrapping/lookup", {"token": info["token"]})
    assert status == 200 and body["data"]["creation_ttl"] == info["ttl"], body


async def test_wrap_ttl_zero_means_unwrapped(dev: DevServer) -> None:
    await put_secret(dev)
    status, body = await call(dev, "GET", "secret/data/app", wrap="0")
    assert status == 200 and body["wrap_info"] is None, body
    assert body["data"]["data"] == {"password": "s3cret"}


async def test_vault_wrap_header_alias(dev: DevServer) -> None:
    await put_secret(dev)
    status, body = await call(dev, "GET", "secret/data/app", headers={"X-Vault-Wrap-TTL": "90s"})
    assert status == 200, body
    assert body["wrap_info"]["ttl"] == 90 and body["data"] is None


async def test_errors_are_not_wrapped(dev: DevServer) -> None:
    before = len(await dev.core.tokens.all_entries())
    status, body = await call(dev, "GET", "secret/data/missing", wrap="1m")
    assert status == 404, body
    assert "wrap_info" not in body or body.get("wrap_info") is None
    assert len(await dev.core.tokens.all_entries()) == before


async def test_wrapping_token_expires(dev: DevServer) -> None:
    await put_secret(dev)
    info = await wrapped_read(dev, "1s")
    tokens = dev.core.tokens
    key = await tokens.hash_id(info["token"])
    entry = await tokens.get_by_key(key)
    assert entry is not None
    cubby_prefix = (
        f"logical/{dev.core.mounts.find('secret', 'cubbyhole').uuid}/{entry.cubbyhole_id}/"
    )
    assert await dev.core.barrier.list(cubby_prefix) == ["response"]
    await asyncio.sleep(1.2)
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {"token": info["token"]})
    assert_invalid(status, body)
    status, body = await call(dev, "POST", "sys/wrapping/unwrap", {}, token=info["token"])
    assert_invalid(status, body)
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and await tokens.get_by_key(key) is not None:
        await asyncio.sleep(0.2)
    assert await tokens.get_by_key(key) is None
    assert await dev.core.barrier.list(cubby_prefix) == []
