"""The userpass auth method through the real app: user CRUD under ACLs, logins and
the tokens they mint, token settings, input validation and what is stored.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from sdk.errors import StorageError
from tests.api.helpers import Reply, assert_error, call

if TYPE_CHECKING:
    from tests.conftest import DevServer

ROOT = "<root>"
INVALID = ["invalid username or password"]
USERS = "auth/userpass/users"
PASSWORD = "correct horse battery staple"


async def req(
    dev: DevServer, method: str, path: str, body: Any = None, token: str | None = ROOT
) -> Reply:
    headers = dict(dev.auth) if token == ROOT else {"X-Service-Token": token} if token else {}
    return await call(dev.client, method, f"/v1/{path}", json_body=body, headers=headers)


async def ok(dev: DevServer, method: str, path: str, body: Any = None, token: str = ROOT) -> Any:
    reply = await req(dev, method, path, body, token)
    assert reply.status in (200, 204), str(reply)
    return reply.body


async def enable(dev: DevServer, path: str = "userpass") -> None:
    await ok(dev, "POST", f"sys/auth/{path}", {"type": "userpass"})


async def add_user(dev: DevServer, name: str = "alice", **fields: Any) -> None:
    await ok(dev, "POST", f"{USERS}/{name}", {"password": PASSWORD, **fields})


async def login(
    dev: DevServer, name: str = "alice", password: str = PASSWORD, mount: str = "userpass"
) -> Reply:
    return await req(dev, "POST", f"auth/{mount}/login/{name}", {"password": password}, None)


async def login_auth(dev: DevServer, name: str = "alice", password: str = PASSWORD) -> Any:
    reply = await login(dev, name, password)
    assert reply.status == 200, str(reply)
    return reply.body["auth"]


async def policy(dev: DevServer, name: str, *rules: tuple[str, str]) -> None:
    """Write policy ``name`` from ``(path, "cap cap ...")`` rules."""
    text = "\n".join(
        f'path "{path}" {{ capabilities = {json.dumps(caps.split())} }}' for path, caps in rules
    )
    await ok(dev, "PUT", f"sys/policies/acl/{name}", {"policy": text})


async def token_with(dev: DevServer, *rules: tuple[str, str]) -> str:
    await policy(dev, "tester", *rules)
    body = await ok(dev, "POST", "auth/token/create", {"policies": ["tester"]})
    token: str = body["auth"]["client_token"]
    return token


@pytest.fixture
async def up(dev: DevServer) -> DevServer:
    """``dev`` with userpass enabled at ``auth/userpass/``."""
    await enable(dev)
    return dev


# --- users ---------------------------------------------------------------------------------------


async def test_user_crud(up: DevServer) -> None:
    await add_user(up, policies="dev, ops", token_ttl="30m", token_max_ttl=7200)
    data = (await ok(up, "GET", f"{USERS}/alice"))["data"]
    assert data == {
        "token_ttl": 1800,
        "token_max_ttl": 7200,
        "token_policies": ["dev", "ops"],
        "policies": ["dev", "ops"],
        "token_bound_cidrs": [],
        "token_explicit_max_ttl": 0,
        "token_no_default_policy": False,
        "token_num_uses": 0,
        "token_period": 0,
        "token_type": "default",
    }
    # An update changes only the given fields and keeps the password.
    await ok(up, "POST", f"{USERS}/alice", {"token_ttl": "1h"})
    data = (await ok(up, "GET", f"{USERS}/alice"))["data"]
    assert (data["token_ttl"], data["token_max_ttl"]) == (3600, 7200)
    assert data["policies"] == ["dev", "ops"]
    assert (await login(up)).status == 200
    await add_user(up, "bob")
    assert (await ok(up, "LIST", USERS))["data"] == {"keys": ["alice", "bob"]}
    await ok(up, "DELETE", f"{USERS}/alice")
    assert (await req(up, "GET", f"{USERS}/alice")).status == 404
    assert (await login(up)).errors == INVALID
    await ok(up, "DELETE", f"{USERS}/bob")
    assert (await req(up, "LIST", USERS)).status == 404
    await ok(up, "DELETE", f"{USERS}/nobody")  # deleting nothing is fine, as in the reference


async def test_usernames_are_case_insensitive(up: DevServer) -> None:
    await add_user(up, "Alice")
    assert (await ok(up, "LIST", USERS))["data"]["keys"] == ["alice"]
    assert (await req(up, "GET", f"{USERS}/ALICE")).status == 200
    auth = await login_auth(up, "aLiCe")
    assert auth["metadata"] == {"username": "alice"}


async def test_legacy_field_names(up: DevServer) -> None:
    await add_user(up, ttl=60, max_ttl="2m", bound_cidrs="127.0.0.1/32", policies=["p"])
    data = (await ok(up, "GET", f"{USERS}/alice"))["data"]
    assert data["token_ttl"] == 60
    assert data["token_max_ttl"] == 120
    assert data["token_bound_cidrs"] == ["127.0.0.1/32"]
    assert data["token_policies"] == data["policies"] == ["p"]


async def test_reads_never_show_the_password(up: DevServer) -> None:
    await add_user(up)
    reply = await req(up, "GET", f"{USERS}/alice")
    assert PASSWORD.encode() not in reply.raw
    assert b"argon2" not in reply.raw
    assert not {"password", "password_hash"} & set(reply.data)


async def test_user_endpoints_need_permission(up: DevServer) -> None:
    await add_user(up)
    nothing = await token_with(up, ("secret/data/*", "read"))
    for method, path, body in [
        ("POST", f"{USERS}/mallory", {"password": "x"}),
        ("POST", f"{USERS}/alice", {"token_policies": "root"}),
        ("GET", f"{USERS}/alice", None),
        ("LIST", USERS, None),
        ("DELETE", f"{USERS}/alice", None),
        ("POST", f"{USERS}/alice/password", {"password": "mine now"}),
        ("POST", f"{USERS}/alice/policies", {"token_policies": "root"}),
    ]:
        reply = await req(up, method, path, body, nothing)
        assert_error(reply, 403, "permission denied")
    reader = await token_with(up, (f"{USERS}/*", "read list"), (USERS, "list"))
    assert (await req(up, "GET", f"{USERS}/alice", token=reader)).status == 200
    assert (await req(up, "LIST", USERS, token=reader)).status == 200
    reply = await req(up, "POST", f"{USERS}/alice", {"token_ttl": 1}, reader)
    assert_error(reply, 403)
    assert (await login(up)).status == 200  # nothing above changed alice


async def test_acl_tells_create_from_update(up: DevServer) -> None:
    creator = await token_with(up, (f"{USERS}/*", "create"))
    assert (await req(up, "POST", f"{USERS}/bob", {"password": "pw"}, creator)).status == 204
    # bob exists now: the same write is an update, which the policy does not grant.
    reply = await req(up, "POST", f"{USERS}/bob", {"password": "other"}, creator)
    assert_error(reply, 403)
    assert (await login(up, "bob", "pw")).status == 200
    updater = await token_with(up, (f"{USERS}/*", "update"))
    assert_error(await req(up, "POST", f"{USERS}/carol", {"password": "pw"}, updater), 403)
    assert (await req(up, "POST", f"{USERS}/bob", {"token_ttl": 60}, updater)).status == 204


async def test_mounts_keep_their_own_users(up: DevServer) -> None:
    await enable(up, "people")
    await add_user(up)
    assert (await login(up, mount="people")).errors == INVALID
    await ok(up, "POST", "auth/people/users/alice", {"password": "other"})
    assert (await login(up, password="other", mount="people")).status == 200
    assert (await login(up)).status == 200


# --- login ---------------------------------------------------------------------------------------


async def test_login_returns_a_working_token(up: DevServer) -> None:
    await policy(up, "dev", ("secret/data/dev/*", "read create update"))
    await ok(up, "POST", "secret/data/dev/app", {"data": {"k": "v"}})
    await ok(up, "POST", "secret/data/ops/app", {"data": {"k": "v"}})
    await add_user(up, token_policies="dev", token_ttl="20m")
    reply = await login(up)
    assert reply.status == 200, str(reply)
    auth = reply.body["auth"]
    assert auth["client_token"].startswith("hvs.")
    assert auth["accessor"]
    assert auth["policies"] == ["default", "dev"]
    assert auth["token_policies"] == ["default", "dev"]
    assert auth["metadata"] == {"username": "alice"}
    assert auth["lease_duration"] == 1200
    assert auth["renewable"] is True
    assert auth["token_type"] == "service"
    token = auth["client_token"]
    read = await req(up, "GET", "secret/data/dev/app", token=token)
    assert read.status == 200 and read.data["data"] == {"k": "v"}
    assert_error(await req(up, "GET", "secret/data/ops/app", token=token), 403)
    assert_error(await req(up, "GET", f"{USERS}/alice", token=token), 403)
    looked = (await ok(up, "GET", "auth/token/lookup-self", token=token))["data"]
    assert looked["display_name"] == "userpass-alice"
    assert looked["meta"] == {"username": "alice"}
    assert looked["path"] == "auth/userpass/login/alice"


async def test_wrong_password_and_unknown_user_look_the_same(up: DevServer) -> None:
    await add_user(up)
    wrong, unknown = await login(up, password="nope"), await login(up, "nobody")
    assert (wrong.status, wrong.body) == (400, {"errors": INVALID})
    assert (unknown.status, unknown.body) == (400, {"errors": INVALID})
    assert_error(await req(up, "POST", "auth/userpass/login/alice", {}, None), 400, "password")
    assert_error(await login(up, password=""), 400, "password")


async def test_password_update(up: DevServer) -> None:
    await add_user(up)
    await ok(up, "POST", f"{USERS}/alice/password", {"password": "new secret"})
    assert (await login(up)).errors == INVALID
    assert (await login(up, password="new secret")).status == 200
    # The main endpoint changes it too.
    await ok(up, "POST", f"{USERS}/alice", {"password": "third"})
    assert (await login(up, password="new secret")).errors == INVALID
    assert (await login(up, password="third")).status == 200
    assert_error(await req(up, "POST", f"{USERS}/alice/password", {}), 400, "missing password")
    reply = await req(up, "POST", f"{USERS}/nobody/password", {"password": "x"})
    assert_error(reply, 400, "does not exist")


async def test_policies_update(up: DevServer) -> None:
    await add_user(up, token_policies="a", token_ttl=90)
    await ok(up, "POST", f"{USERS}/alice/policies", {"token_policies": "b,c"})
    assert (await login_auth(up))["policies"] == ["b", "c", "default"]
    await ok(up, "POST", f"{USERS}/alice/policies", {"policies": ["d"]})
    data = (await ok(up, "GET", f"{USERS}/alice"))["data"]
    assert (data["token_policies"], data["token_ttl"]) == (["d"], 90)
    both = {"policies": "x", "token_policies": "y"}
    assert_error(await req(up, "POST", f"{USERS}/alice/policies", both), 400, "both")
    assert_error(await req(up, "POST", f"{USERS}/alice/policies", {}), 400, "token_policies")
    reply = await req(up, "POST", f"{USERS}/nobody/policies", {"token_policies": "a"})
    assert_error(reply, 400, "does not exist")


async def test_no_default_policy(up: DevServer) -> None:
    await add_user(up, token_policies="dev", token_no_default_policy=True)
    assert (await login_auth(up))["policies"] == ["dev"]


async def test_token_bound_cidrs(up: DevServer) -> None:
    await add_user(up, token_bound_cidrs="10.0.0.0/8")
    assert_error(await login(up), 403, "not allowed")
    await ok(up, "POST", f"{USERS}/alice", {"token_bound_cidrs": ["127.0.0.0/8", "::1/128"]})
    token = (await login_auth(up))["client_token"]
    looked = (await ok(up, "GET", "auth/token/lookup-self", token=token))["data"]
    assert looked["bound_cidrs"] == ["127.0.0.0/8", "::1/128"]


async def test_token_num_uses(up: DevServer) -> None:
    await add_user(up, token_num_uses=2)
    auth = await login_auth(up)
    assert auth["num_uses"] == 2
    token = auth["client_token"]
    for _ in range(2):
        assert (await req(up, "GET", "auth/token/lookup-self", token=token)).status == 200
    assert_error(await req(up, "GET", "auth/token/lookup-self", token=token), 403)


async def test_token_type_batch(up: DevServer) -> None:
    await add_user(up, token_type="batch", token_ttl=300)
    auth = await login_auth(up)
    assert auth["token_type"] == "batch"
    assert auth["renewable"] is False
    assert auth["lease_duration"] == 300
    looked = await req(up, "GET", "auth/token/lookup-self", token=auth["client_token"])
    assert looked.status == 200 and looked.data["type"] == "batch"


async def test_mount_max_ttl_caps_the_token(up: DevServer) -> None:
    await ok(up, "POST", "sys/auth/userpass/tune", {"max_lease_ttl": "10m"})
    await add_user(up, token_ttl="1h")
    assert (await login_auth(up))["lease_duration"] == 600


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({}, "missing password"),
        ({"token_ttl": 60}, "missing password"),
        ({"password": ""}, "password"),
        ({"password": {"a": 1}}, "password"),
        ({"password": "pw", "token_ttl": [1]}, "token_ttl"),
        ({"password": "pw", "token_ttl": "soon"}, "token_ttl"),
        ({"password": "pw", "token_ttl": -5}, "negative"),
        ({"password": "pw", "token_max_ttl": "-1h"}, "negative"),
        ({"password": "pw", "token_num_uses": -1}, "negative"),
        ({"password": "pw", "token_num_uses": "many"}, "token_num_uses"),
        ({"password": "pw", "token_no_default_policy": "maybe"}, "token_no_default_policy"),
        ({"password": "pw", "token_policies": {"a": 1}}, "token_policies"),
        ({"password": "pw", "token_ttl": "2h", "token_max_ttl": "1h"}, "token_max_ttl"),
        ({"password": "pw", "token_bound_cidrs": "10.0.0.0/33"}, "CIDR"),
        ({"password": "pw", "token_bound_cidrs": ["not-an-ip"]}, "CIDR"),
        ({"password": "pw", "token_type": "gold"}, "token_type"),
        ({"password": "pw", "policies": "a", "token_policies": "b"}, "both"),
        ({"password": "pw", "ttl": 1, "token_ttl": 2}, "both"),
    ],
)
async def test_bad_user_input(up: DevServer, body: dict[str, Any], fragment: str) -> None:
    assert_error(await req(up, "POST", f"{USERS}/alice", body), 400, fragment)
    assert (await req(up, "GET", f"{USERS}/alice")).status == 404


async def test_updates_are_validated_against_the_stored_settings(up: DevServer) -> None:
    await add_user(up, token_max_ttl="1h")
    reply = await req(up, "POST", f"{USERS}/alice", {"token_ttl": "2h", "password": "new"})
    assert_error(reply, 400, "token_max_ttl")
    assert (await login(up)).status == 200  # the refused update changed nothing


@pytest.mark.parametrize("path", [f"{USERS}/.hidden", f"{USERS}/a/b", f"{USERS}/bad%20name"])
async def test_bad_usernames(up: DevServer, path: str) -> None:
    reply = await req(up, "POST", path, {"password": "pw"})
    assert 400 <= reply.status < 500, str(reply)


async def test_bad_login_bodies_are_4xx(up: DevServer) -> None:
    await add_user(up)
    for body in ({"password": ["x"]}, {"password": None}, {"password": {"x": 1}}):
        reply = await req(up, "POST", "auth/userpass/login/alice", body, None)
        assert reply.status == 400, str(reply)
        assert reply.errors


# --- storage -------------------------------------------------------------------------------------


async def test_stored_records_never_hold_the_password(up: DevServer) -> None:
    await add_user(up, policies="dev")
    await ok(up, "POST", f"{USERS}/alice/password", {"password": PASSWORD + "!"})
    await add_user(up, "bob")
    assert (await login(up, "bob")).status == 200
    seen_hash = False
    for key in await _all_keys(up):
        raw = (await up.core.physical.get(key)).value  # type: ignore[union-attr]
        try:
            stored = await up.core.barrier.get(key)
            plain = stored.value if stored else b""
        except StorageError:  # not a barrier value (keyring, seal configuration)
            plain = b""
        for value in (raw, plain):
            assert PASSWORD.encode() not in value, key
        seen_hash = seen_hash or b"$argon2id$" in plain
    assert seen_hash, "no user record found"


async def _all_keys(dev: DevServer, prefix: str = "") -> list[str]:
    keys: list[str] = []
    for child in await dev.core.physical.list(prefix):
        if child.endswith("/"):
            keys += await _all_keys(dev, prefix + child)
        else:
            keys.append(prefix + child)
    return keys


async def test_renewal_never_passes_the_methods_max_ttl(dev: DevServer) -> None:
    """token_max_ttl caps renewals too, not only the first TTL."""
    await dev.client.post("/v1/sys/auth/userpass", json={"type": "userpass"}, headers=dev.auth)
    await dev.client.post(
        "/v1/auth/userpass/users/renewer",
        json={"password": "pw-renew-1", "token_ttl": "60s", "token_max_ttl": "120s"},
        headers=dev.auth,
    )
    resp = await dev.client.post("/v1/auth/userpass/login/renewer", json={"password": "pw-renew-1"})
    token = (await resp.json())["auth"]["client_token"]
    resp = await dev.client.post(
        "/v1/auth/token/renew-self", json={"increment": "1h"}, headers={"X-Service-Token": token}
    )
    assert resp.status == 200
    assert (await resp.json())["auth"]["lease_duration"] <= 120
