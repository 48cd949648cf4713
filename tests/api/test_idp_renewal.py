"""Renewing an ``idp`` login's token asks the provider again (issue 14), as the
reference's Okta method does: current ``token_ttl``/``token_max_ttl``, a
locked or removed user refused, policies refreshed. Against the emulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

from api.outbound import AiohttpClient
from tests.api.test_idp import API_TOKEN, TIMEOUT, Idp
from tests.support.idp_emulator import IdpEmulator

if TYPE_CHECKING:
    from tests.conftest import DevServer

PASSWORD = "hunter2-but-longer"


@pytest.fixture
async def provider() -> AsyncIterator[IdpEmulator]:
    emu = IdpEmulator(api_token=API_TOKEN)
    await emu.start()
    try:
        yield emu
    finally:
        await emu.close()


@pytest.fixture
async def method(dev: DevServer, provider: IdpEmulator) -> AsyncIterator[Idp]:
    http = AiohttpClient(max_timeout=TIMEOUT)
    dev.core.http_client = http  # type: ignore[attr-defined]
    setup = Idp(dev, provider)
    reply = await setup.call("POST", "sys/auth/idp", {"type": "idp"})
    assert reply.status == 204, str(reply)
    provider.add_user("alice", PASSWORD, groups=["eng"])
    await setup.configure(api_token=API_TOKEN, token_ttl="1h", token_max_ttl="10h")
    assert (await setup.call("POST", "auth/idp/groups/eng", {"policies": "eng-read"})).status == 204
    try:
        yield setup
    finally:
        await http.close()


async def _renew_self(idp: Idp, token: str, **body: Any) -> Any:
    return await idp.call("POST", "auth/token/renew-self", body, token=token)


async def test_renewal_uses_the_current_token_ttl(method: Idp) -> None:
    auth = await method.logged_in("alice", password=PASSWORD)
    assert auth["lease_duration"] == 3600
    await method.configure(token_ttl="20m", token_max_ttl="10h")
    reply = await _renew_self(method, auth["client_token"])
    assert reply.status == 200, str(reply)
    assert reply.body["auth"]["lease_duration"] == 1200
    # the method's max TTL now caps even an explicit increment
    await method.configure(token_ttl="20m", token_max_ttl="30m")
    reply = await _renew_self(method, auth["client_token"], increment="5h")
    assert reply.status == 200, str(reply)
    assert 0 < reply.body["auth"]["lease_duration"] <= 1800
    assert len(method.emu.seen("authn")) == 3  # login, and once per renewal


async def test_renewal_refreshes_policies(method: Idp) -> None:
    auth = await method.logged_in("alice", password=PASSWORD)
    assert "eng-read" in auth["policies"]
    assert (
        await method.call("POST", "auth/idp/groups/eng", {"policies": "eng-write"})
    ).status == 204
    assert (await method.call("POST", "auth/idp/users/alice", {"policies": "own"})).status == 204
    reply = await _renew_self(method, auth["client_token"])
    assert reply.status == 200, str(reply)
    assert set(reply.body["auth"]["policies"]) == {"default", "eng-write", "own"}
    looked = await method.call("GET", "auth/token/lookup-self", token=auth["client_token"])
    assert set(looked.data["policies"]) == {"default", "eng-write", "own"}


@pytest.mark.parametrize("change", ["locked", "removed", "password"])
async def test_renewal_refused_when_the_user_is_gone(method: Idp, change: str) -> None:
    auth = await method.logged_in("alice", password=PASSWORD)
    if change == "locked":
        method.emu.users["alice"].status = "LOCKED_OUT"
    elif change == "removed":
        del method.emu.users["alice"]
    else:
        method.emu.users["alice"].password = "changed-elsewhere"
    reply = await _renew_self(method, auth["client_token"])
    assert reply.status == 400, str(reply)
    assert reply.errors
    # by accessor (an operator renewing it) too
    reply = await method.call("POST", "auth/token/renew-accessor", {"accessor": auth["accessor"]})
    assert reply.status == 400, str(reply)


async def test_the_password_is_never_shown(method: Idp) -> None:
    auth = await method.logged_in("alice", password=PASSWORD)
    for path, token in (("auth/token/lookup-self", auth["client_token"]),):
        reply = await method.call("GET", path, token=token)
        assert PASSWORD not in reply.raw.decode()
    reply = await method.call("POST", "auth/token/lookup-accessor", {"accessor": auth["accessor"]})
    assert PASSWORD not in reply.raw.decode()
    stored = await _all_stored(method.dev)
    assert stored and all(PASSWORD.encode() not in value for value in stored)


async def _all_stored(dev: DevServer, prefix: str = "") -> list[bytes]:
    """Every value in physical storage (as written: barrier-encrypted)."""
    values: list[bytes] = []
    for name in await dev.core.physical.list(prefix):
        if name.endswith("/"):
            values += await _all_stored(dev, prefix + name)
        elif (entry := await dev.core.physical.get(prefix + name)) is not None:
            values.append(entry.value)
    return values


async def test_batch_tokens_keep_no_credentials(method: Idp) -> None:
    await method.configure(token_type="batch")
    auth = await method.logged_in("alice", password=PASSWORD)
    assert auth["token_type"] == "batch"
    reply = await method.call("GET", "auth/token/lookup-self", token=auth["client_token"])
    assert reply.status == 200 and PASSWORD not in reply.raw.decode()


@pytest.mark.parametrize(
    ("mount_type", "method_type", "issued"),
    [
        ("default-batch", "default", "batch"),
        ("default-batch", "service", "service"),
        ("default-service", "default-batch", "batch"),
        ("service", "batch", "service"),
    ],
)
async def test_tuned_token_type_applies_to_idp_logins(
    method: Idp, mount_type: str, method_type: str, issued: str
) -> None:
    reply = await method.call("POST", "sys/auth/idp/tune", {"token_type": mount_type})
    assert reply.status == 204, str(reply)
    await method.configure(token_type=method_type)
    auth = await method.logged_in("alice", password=PASSWORD)
    assert auth["token_type"] == issued
