"""``sys/leases/*`` for tokens' leases (issue 14): lookup, list, renew, revoke,
revoke-prefix and revoke-force of an auth mount's tokens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.api.helpers import dev_call as call
from tests.api.helpers import token_with

if TYPE_CHECKING:
    from tests.conftest import DevServer

PASSWORD = "correct horse battery staple"


async def _userpass(dev: DevServer, mount: str = "userpass", *users: str) -> None:
    status, answer = await call(dev, "POST", f"sys/auth/{mount}", {"type": "userpass"})
    assert status == 204, answer
    policy = 'path "auth/token/create" { capabilities = ["update"] }'
    status, answer = await call(dev, "PUT", "sys/policies/acl/creator", {"policy": policy})
    assert status == 204, answer
    for user in users or ("alice",):
        body = {"password": PASSWORD, "token_ttl": "1h", "token_policies": "creator"}
        status, answer = await call(dev, "POST", f"auth/{mount}/users/{user}", body)
        assert status == 204, answer


async def _login(dev: DevServer, user: str = "alice", mount: str = "userpass") -> dict[str, Any]:
    status, answer = await call(
        dev, "POST", f"auth/{mount}/login/{user}", {"password": PASSWORD}, token=None
    )
    assert status == 200, answer
    auth: dict[str, Any] = answer["auth"]
    return auth


async def _alive(dev: DevServer, token: str) -> bool:
    status, _ = await call(dev, "GET", "auth/token/lookup-self", token=token)
    return status == 200


async def _lease_of(dev: DevServer, prefix: str) -> str:
    """The one lease id under ``prefix`` (listing it, as ``vault list`` would)."""
    status, listed = await call(dev, "LIST", f"sys/leases/lookup/{prefix}")
    assert status == 200, listed
    keys = listed["data"]["keys"]
    assert len(keys) == 1, keys
    return prefix + keys[0]


async def test_list_and_lookup_a_login_lease(dev: DevServer) -> None:
    await _userpass(dev, "userpass", "alice", "bob")
    await _login(dev, "alice")
    await _login(dev, "bob")
    status, listed = await call(dev, "LIST", "sys/leases/lookup/auth/userpass/login")
    assert status == 200, listed
    assert listed["data"]["keys"] == ["alice/", "bob/"]
    lease = await _lease_of(dev, "auth/userpass/login/alice/")
    status, looked = await call(dev, "PUT", "sys/leases/lookup", {"lease_id": lease})
    assert status == 200, looked
    data = looked["data"]
    assert data["id"] == lease
    assert data["renewable"] is True
    assert 3500 < data["ttl"] <= 3600
    assert data["issue_time"] and data["expire_time"] and data["last_renewal"] is None
    # the default policy may look up a lease by id
    status, looked = await call(
        dev, "PUT", "sys/leases/lookup", {"lease_id": lease}, token=await token_with(dev)
    )
    assert status == 200, looked


async def test_lookup_of_unknown_leases_is_400(dev: DevServer) -> None:
    for lease in ("", "auth/userpass/login/alice/nope", "nothing", "a/..", "a/.", "../../x"):
        status, answer = await call(dev, "PUT", "sys/leases/lookup", {"lease_id": lease})
        assert status == 400 and answer["errors"], answer
    status, answer = await call(dev, "LIST", "sys/leases/lookup/auth/none/")
    assert status == 404, answer


async def test_listing_needs_sudo(dev: DevServer) -> None:
    token = await token_with(dev, p='path "sys/leases/*" { capabilities = ["list", "update"] }')
    status, answer = await call(dev, "LIST", "sys/leases/lookup/auth/", token=token)
    assert status == 403, answer


async def test_token_leases_are_not_renewed_here(dev: DevServer) -> None:
    await _userpass(dev)
    await _login(dev)
    lease = await _lease_of(dev, "auth/userpass/login/alice/")
    status, answer = await call(dev, "PUT", "sys/leases/renew", {"lease_id": lease})
    assert status == 400 and "tokens cannot be renewed" in answer["errors"][0], answer
    status, answer = await call(dev, "PUT", "sys/leases/renew", {"lease_id": lease + "x"})
    assert status == 400 and "not found" in answer["errors"][0], answer


@pytest.mark.parametrize("path", ["sys/leases/revoke", "sys/revoke"])
async def test_revoke_a_lease_revokes_its_token(dev: DevServer, path: str) -> None:
    await _userpass(dev)
    auth = await _login(dev)
    lease = await _lease_of(dev, "auth/userpass/login/alice/")
    status, answer = await call(dev, "PUT", path, {"lease_id": lease})
    assert status == 204, answer
    assert not await _alive(dev, auth["client_token"])
    # revoking again is fine, as in the reference
    status, answer = await call(dev, "PUT", f"{path}/{lease}")
    assert status == 204, answer


async def test_token_create_leases(dev: DevServer) -> None:
    status, created = await call(dev, "POST", "auth/token/create", {"ttl": "1h"})
    token = created["auth"]["client_token"]
    lease = await _lease_of(dev, "auth/token/create/")
    status, answer = await call(dev, "PUT", f"sys/leases/revoke/{lease}")
    assert status == 204, answer
    assert not await _alive(dev, token)
    assert await _alive(dev, dev.token)  # the root token has no lease and is untouched


@pytest.mark.parametrize("kind", ["revoke-prefix", "revoke-force"])
async def test_revoke_prefix_of_an_auth_mount(dev: DevServer, kind: str) -> None:
    await _userpass(dev, "userpass", "alice", "bob")
    await _userpass(dev, "staff", "carol")
    alice, bob = await _login(dev, "alice"), await _login(dev, "bob")
    carol = await _login(dev, "carol", mount="staff")
    status, child = await call(
        dev, "POST", "auth/token/create", {"ttl": "10m"}, token=alice["client_token"]
    )
    assert status == 200, child
    status, answer = await call(dev, "PUT", f"sys/leases/{kind}/auth/userpass")
    assert status == 204, answer
    for gone in (alice, bob, child["auth"]):
        assert not await _alive(dev, gone["client_token"])
    assert await _alive(dev, carol["client_token"])
    status, answer = await call(dev, "PUT", f"sys/{kind}/auth/staff/")
    assert status == 204, answer
    assert not await _alive(dev, carol["client_token"])


async def test_revoke_prefix_needs_sudo(dev: DevServer) -> None:
    await _userpass(dev)
    auth = await _login(dev)
    token = await token_with(dev, p='path "sys/*" { capabilities = ["update", "create"] }')
    for kind in ("revoke-prefix", "revoke-force"):
        status, answer = await call(dev, "PUT", f"sys/leases/{kind}/auth/userpass", token=token)
        assert status == 403, answer
    assert await _alive(dev, auth["client_token"])


async def test_leases_stay_in_their_namespace(dev: DevServer) -> None:
    status, answer = await call(dev, "PUT", "sys/namespaces/team", {})
    assert status in (200, 204), answer
    await _userpass(dev)
    auth = await _login(dev)
    team = {"X-Service-Namespace": "team"}
    status, answer = await call(dev, "LIST", "sys/leases/lookup/auth/", headers=team)
    assert status == 404, answer
    status, answer = await call(dev, "PUT", "sys/leases/revoke-prefix/auth/userpass", headers=team)
    assert status == 204, answer
    assert await _alive(dev, auth["client_token"])
