"""Cubbyhole over HTTP: per-token isolation, CRUD, and destruction on revocation."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.api.helpers import ROOT
from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer


async def new_token(dev: DevServer, **fields: Any) -> dict[str, Any]:
    status, body = await call(dev, "POST", "auth/token/create", {"policies": ["default"], **fields})
    assert status == 200, body
    auth: dict[str, Any] = body["auth"]
    return auth


async def cubby_keys(dev: DevServer, token: str) -> list[str]:
    """Physical keys of a token's cubbyhole, straight from storage."""
    entry = await dev.core.tokens.get_by_key(await dev.core.tokens.hash_id(token))
    assert entry is not None and entry.cubbyhole_id
    return await cubby_keys_by_id(dev, entry.cubbyhole_id)


async def cubby_keys_by_id(dev: DevServer, cubbyhole_id: str) -> list[str]:
    mount = dev.core.mounts.find("secret", "cubbyhole")
    prefix = f"logical/{mount.uuid}/{cubbyhole_id}/"
    keys = await dev.core.barrier.list(prefix)
    found: list[str] = []
    for key in keys:
        if key.endswith("/"):
            found.extend(
                key + sub for sub in await cubby_keys_by_id(dev, f"{cubbyhole_id}/{key[:-1]}")
            )
        else:
            found.append(key)
    return found


async def test_write_read_list_delete(dev: DevServer) -> None:
    token = (await new_token(dev))["client_token"]
    value = {"s": "text", "n": 3, "nested": {"list": [1, None]}}
    status, body = await call(dev, "POST", "cubbyhole/app/config", value, token=token)
    assert status == 204, body
    status, body = await call(dev, "PUT", "cubbyhole/top", {"a": "1"}, token=token)
    assert status == 204, body

    status, body = await call(dev, "GET", "cubbyhole/app/config", token=token)
    assert status == 200 and body["data"] == value, body
    status, body = await call(dev, "LIST", "cubbyhole", token=token)
    assert status == 200 and body["data"]["keys"] == ["app/", "top"], body
    status, body = await call(dev, "GET", "cubbyhole/app?list=true", token=token)
    assert status == 200 and body["data"]["keys"] == ["config"], body

    # overwrite (update through the existence check)
    status, body = await call(dev, "POST", "cubbyhole/top", {"b": "2"}, token=token)
    assert status == 204, body
    assert (await call(dev, "GET", "cubbyhole/top", token=token))[1]["data"] == {"b": "2"}

    status, body = await call(dev, "DELETE", "cubbyhole/top", token=token)
    assert status == 204, body
    assert (await call(dev, "GET", "cubbyhole/top", token=token))[0] == 404
    assert (await call(dev, "DELETE", "cubbyhole/top", token=token))[0] == 204
    assert await cubby_keys(dev, token) == ["app/config"]


async def test_isolation_between_tokens_even_for_root(dev: DevServer) -> None:
    alice = (await new_token(dev))["client_token"]
    bob = (await new_token(dev))["client_token"]
    await call(dev, "POST", "cubbyhole/secret", {"owner": "alice"}, token=alice)

    for other in (bob, ROOT):
        status, body = await call(dev, "GET", "cubbyhole/secret", token=other)
        assert status == 404, body
        status, body = await call(dev, "LIST", "cubbyhole", token=other)
        assert status == 404, body
    # bob writes the same path in his own cubbyhole; alice's is untouched
    assert (await call(dev, "POST", "cubbyhole/secret", {"owner": "bob"}, token=bob))[0] == 204
    assert (await call(dev, "DELETE", "cubbyhole/secret"))[0] == 204
    assert (await call(dev, "GET", "cubbyhole/secret", token=alice))[1]["data"] == {
        "owner": "alice"
    }
    assert (await call(dev, "GET", "cubbyhole/secret", token=bob))[1]["data"] == {"owner": "bob"}


@pytest.mark.parametrize(
    ("path", "body"),
    [("cubbyhole/x", {}), ("cubbyhole/dir/", {"a": 1}), ("cubbyhole/", {"a": 1})],
)
async def test_bad_writes_are_400(dev: DevServer, path: str, body: dict[str, Any]) -> None:
    token = (await new_token(dev))["client_token"]
    status, answer = await call(dev, "POST", path, body, token=token)
    assert status == 400 and answer["errors"], answer
    assert await cubby_keys(dev, token) == []


async def test_cubbyhole_needs_a_token_and_a_policy(dev: DevServer) -> None:
    status, body = await call(dev, "GET", "cubbyhole/x", token=None)
    assert (status, body) == (403, {"errors": ["permission denied"]})
    token = (await new_token(dev, no_default_policy=True, policies=["web"]))["client_token"]
    status, body = await call(dev, "POST", "cubbyhole/x", {"a": 1}, token=token)
    assert (status, body) == (403, {"errors": ["permission denied"]})


async def test_batch_tokens_have_no_cubbyhole(dev: DevServer) -> None:
    status, body = await call(
        dev, "POST", "auth/token/create", {"type": "batch", "policies": ["default"]}
    )
    batch = body["auth"]["client_token"]
    for method, path, payload in (
        ("POST", "cubbyhole/x", {"a": 1}),
        ("GET", "cubbyhole/x", None),
        ("LIST", "cubbyhole", None),
    ):
        status, answer = await call(dev, method, path, payload, token=batch)
        assert status == 400, answer
        assert "service" in answer["errors"][0]


async def test_revocation_destroys_the_cubbyhole(dev: DevServer) -> None:
    auth = await new_token(dev)
    token = auth["client_token"]
    await call(dev, "POST", "cubbyhole/a", {"v": 1}, token=token)
    await call(dev, "POST", "cubbyhole/deep/b", {"v": 2}, token=token)
    entry = await dev.core.tokens.get_by_key(await dev.core.tokens.hash_id(token))
    assert entry is not None
    assert sorted(await cubby_keys_by_id(dev, entry.cubbyhole_id)) == ["a", "deep/b"]
    bystander = (await new_token(dev))["client_token"]
    await call(dev, "POST", "cubbyhole/keep", {"v": 3}, token=bystander)

    status, body = await call(
        dev, "POST", "auth/token/revoke-accessor", {"accessor": auth["accessor"]}
    )
    assert status == 204, body
    assert await cubby_keys_by_id(dev, entry.cubbyhole_id) == []
    assert await cubby_keys(dev, bystander) == ["keep"]


async def test_expiry_destroys_the_cubbyhole(dev: DevServer) -> None:
    auth = await new_token(dev, ttl=1)
    token = auth["client_token"]
    await call(dev, "POST", "cubbyhole/a", {"v": 1}, token=token)
    entry = await dev.core.tokens.get_by_key(await dev.core.tokens.hash_id(token))
    assert entry is not None
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and await cubby_keys_by_id(dev, entry.cubbyhole_id):
        await asyncio.sleep(0.2)
    assert await cubby_keys_by_id(dev, entry.cubbyhole_id) == []


async def test_cubbyhole_values_are_encrypted_at_rest(dev: DevServer) -> None:
    token = (await new_token(dev))["client_token"]
    marker = "CUBBY-MARKER-93f1c2"
    await call(dev, "POST", "cubbyhole/m", {"v": marker}, token=token)
    keys = await cubby_keys(dev, token)
    entry = await dev.core.tokens.get_by_key(await dev.core.tokens.hash_id(token))
    assert entry is not None and keys == ["m"]
    mount = dev.core.mounts.find("secret", "cubbyhole")
    raw = await dev.core.physical.get(f"logical/{mount.uuid}/{entry.cubbyhole_id}/m")
    assert raw is not None and marker.encode() not in raw.value
