"""``auth/token/*`` through the real HTTP app: creation rules, lookup, renewal,
revocation trees, batch tokens, roles, expiry and storage hygiene."""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

import pytest

from sdk.errors import StorageError
from tests.api.helpers import ROOT
from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer

AUTH_FIELDS = {
    "client_token",
    "accessor",
    "policies",
    "token_policies",
    "identity_policies",
    "metadata",
    "lease_duration",
    "renewable",
    "entity_id",
    "token_type",
    "orphan",
}
DENIED = {"errors": ["permission denied"]}


def assert_error(status: int, body: dict[str, Any], expected: int, contains: str = "") -> None:
    assert status == expected, body
    assert isinstance(body.get("errors"), list) and body["errors"], body
    if contains:
        assert any(contains in message for message in body["errors"]), body


async def put_policy(dev: DevServer, name: str, text: str) -> None:
    status, body = await call(dev, "PUT", f"sys/policies/acl/{name}", {"policy": text})
    assert status == 204, body


async def create(dev: DevServer, token: str | None = ROOT, **fields: Any) -> dict[str, Any]:
    status, body = await call(dev, "POST", "auth/token/create", fields, token=token)
    assert status == 200, body
    auth: dict[str, Any] = body["auth"]
    return auth


async def stored(dev: DevServer, token: str) -> bool:
    tokens = dev.core.tokens
    return await tokens.get_by_key(await tokens.hash_id(token)) is not None


async def lookup(dev: DevServer, token: str) -> tuple[int, dict[str, Any]]:
    return await call(dev, "POST", "auth/token/lookup", {"token": token})


def rule(path: str, *caps: str) -> str:
    quoted = ", ".join(f'"{c}"' for c in caps)
    return f'path "{path}" {{ capabilities = [{quoted}] }}\n'


CREATOR = rule("auth/token/create", "update") + rule("auth/token/create-orphan", "update")
SUDO_CREATOR = rule("auth/token/create", "update", "sudo")


# --- create -----------------------------------------------------------------------


async def test_create_returns_the_full_auth_block(dev: DevServer) -> None:
    status, body = await call(
        dev,
        "POST",
        "auth/token/create",
        {
            "policies": ["Web", "db"],
            "meta": {"app": "billing"},
            "display_name": "My App",
            "ttl": "1h",
        },
    )
    assert status == 200, body
    auth = body["auth"]
    assert set(auth) >= AUTH_FIELDS, auth
    assert re.fullmatch(r"hvs\.[A-Za-z0-9]{24}", auth["client_token"])
    assert re.fullmatch(r"[A-Za-z0-9]{24}", auth["accessor"])
    assert auth["policies"] == ["db", "default", "web"]
    assert auth["token_policies"] == ["db", "default", "web"]
    assert auth["identity_policies"] == []
    assert auth["metadata"] == {"app": "billing"}
    assert auth["lease_duration"] == 3600
    assert auth["renewable"] is True
    assert auth["entity_id"] == ""
    assert auth["token_type"] == "service"
    assert auth["orphan"] is False
    assert body["data"] is None
    assert 'Policy "web" does not exist' in body["warnings"]
    assert 'Policy "db" does not exist' in body["warnings"]

    status, found = await lookup(dev, auth["client_token"])
    assert status == 200, found
    data = found["data"]
    assert data["id"] == auth["client_token"]
    assert data["accessor"] == auth["accessor"]
    assert data["policies"] == ["db", "default", "web"]
    assert data["display_name"] == "token-My-App"
    assert data["meta"] == {"app": "billing"}
    assert data["path"] == "auth/token/create"
    assert (data["num_uses"], data["orphan"], data["type"]) == (0, False, "service")
    assert data["creation_ttl"] == 3600
    assert 3590 <= data["ttl"] <= 3600
    assert isinstance(data["expire_time"], str)
    assert abs(data["creation_time"] - time.time()) < 60
    assert data["explicit_max_ttl"] == 0
    assert data["renewable"] is True


async def test_explicit_max_ttl_caps_the_ttl(dev: DevServer) -> None:
    auth = await create(dev, ttl="1h", explicit_max_ttl=60)
    assert auth["lease_duration"] == 60
    data = (await lookup(dev, auth["client_token"]))[1]["data"]
    assert (data["explicit_max_ttl"], data["creation_ttl"]) == (60, 60)


async def test_no_default_policy_and_renewable_false(dev: DevServer) -> None:
    auth = await create(dev, policies=["web"], no_default_policy=True, renewable=False)
    assert auth["policies"] == ["web"]
    assert auth["renewable"] is False
    status, body = await call(
        dev, "POST", "auth/token/renew", {"token": auth["client_token"], "increment": 60}
    )
    assert_error(status, body, 400, "not renewable")


async def test_root_child_without_ttl_never_expires_and_is_not_renewable(dev: DevServer) -> None:
    auth = await create(dev)
    assert auth["policies"] == ["root"]
    assert auth["lease_duration"] == 0
    assert auth["renewable"] is False
    data = (await lookup(dev, auth["client_token"]))[1]["data"]
    assert data["expire_time"] is None and data["ttl"] == 0


async def test_expiring_root_cannot_create_non_expiring_root(dev: DevServer) -> None:
    expiring = await create(dev, ttl="1h")
    assert expiring["policies"] == ["root"] and expiring["lease_duration"] == 3600
    status, body = await call(dev, "POST", "auth/token/create", {}, token=expiring["client_token"])
    assert_error(status, body, 400, "non-expiring")
    child = await create(dev, token=expiring["client_token"], ttl=60)
    assert child["lease_duration"] == 60


async def test_child_policies_must_be_a_subset_of_the_parent(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    parent = await create(dev, policies=["creator", "web"])
    status, body = await call(
        dev, "POST", "auth/token/create", {"policies": ["admin"]}, token=parent["client_token"]
    )
    assert_error(status, body, 400, "subset of parent")
    child = await create(dev, token=parent["client_token"], policies=["web"])
    assert child["policies"] == ["default", "web"]
    inherited = await create(dev, token=parent["client_token"])
    assert inherited["policies"] == ["creator", "default", "web"]


async def test_default_is_inherited_only_from_a_parent_that_has_it(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    bare = await create(dev, policies=["creator", "web"], no_default_policy=True)
    assert bare["policies"] == ["creator", "web"]
    child = await create(dev, token=bare["client_token"], policies=["web"])
    assert child["policies"] == ["web"]
    inherited = await create(dev, token=bare["client_token"])
    assert inherited["policies"] == ["creator", "web"]
    status, body = await call(
        dev, "POST", "auth/token/create", {"policies": ["default"]}, token=bare["client_token"]
    )
    assert_error(status, body, 400, "subset of parent")


async def test_root_policy_stands_alone(dev: DevServer) -> None:
    auth = await create(dev, policies=["root", "web"])
    assert auth["policies"] == ["root"]


async def test_meta_values_are_strings(dev: DevServer) -> None:
    auth = await create(dev, meta={"n": 5, "ok": True, "s": "x"})
    assert auth["metadata"] == {"n": "5", "ok": "true", "s": "x"}


async def test_only_root_can_create_root_tokens(dev: DevServer) -> None:
    await put_policy(dev, "sudo-creator", SUDO_CREATOR)
    sudo = await create(dev, policies=["sudo-creator"])
    status, body = await call(
        dev, "POST", "auth/token/create", {"policies": ["root"]}, token=sudo["client_token"]
    )
    assert_error(status, body, 400, "root")
    # sudo does allow policies the parent lacks
    other = await create(dev, token=sudo["client_token"], policies=["elsewhere"])
    assert other["policies"] == ["default", "elsewhere"]


async def test_response_wrapping_policy_cannot_be_assigned(dev: DevServer) -> None:
    status, body = await call(
        dev,
        "POST",
        "auth/token/create",
        {"policies": ["response-wrapping"], "no_default_policy": True},
    )
    assert_error(status, body, 400, "response-wrapping")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("period", "1h", "periodic"),
        ("no_parent", True, "orphan"),
        ("id", "my-own-id", "token id"),
    ],
)
async def test_privileged_create_options_need_root_or_sudo(
    dev: DevServer, field: str, value: Any, message: str
) -> None:
    await put_policy(dev, "creator", CREATOR)
    await put_policy(dev, "sudo-creator", SUDO_CREATOR)
    plain = await create(dev, policies=["creator"])
    status, body = await call(
        dev, "POST", "auth/token/create", {field: value}, token=plain["client_token"]
    )
    assert_error(status, body, 400, message)
    assert await dev.core.tokens.lookup("my-own-id") is None

    sudo = await create(dev, policies=["sudo-creator"])
    made = await create(dev, token=sudo["client_token"], **{field: value})
    data = (await lookup(dev, made["client_token"]))[1]["data"]
    if field == "period":
        assert data["period"] == 3600 and made["lease_duration"] == 3600
    elif field == "no_parent":
        assert made["orphan"] is True and data["orphan"] is True
    else:
        assert made["client_token"] == "my-own-id"
        assert data["id"] == "my-own-id"


async def test_custom_token_id_rules(dev: DevServer) -> None:
    made = await create(dev, id="app-token-1", policies=["web"])
    assert made["client_token"] == "app-token-1"
    status, body = await call(dev, "GET", "auth/token/lookup-self", token="app-token-1")
    assert status == 200 and body["data"]["policies"] == ["default", "web"], body
    for bad in ("has.dot", "s.prefixed", "hvs.prefixed", " padded "):
        status, body = await call(dev, "POST", "auth/token/create", {"id": bad})
        assert_error(status, body, 400)
    status, body = await call(dev, "POST", "auth/token/create", {"id": "app-token-1"})
    assert_error(status, body, 400, "already exists")


async def test_create_orphan_endpoint(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    parent = await create(dev, policies=["creator"])
    status, body = await call(
        dev, "POST", "auth/token/create-orphan", {}, token=parent["client_token"]
    )
    assert status == 200, body
    assert body["auth"]["orphan"] is True
    data = (await lookup(dev, body["auth"]["client_token"]))[1]["data"]
    assert data["orphan"] is True and data["path"] == "auth/token/create-orphan"
    # an orphan survives the revocation of the token that made it
    await call(dev, "POST", "auth/token/revoke", {"token": parent["client_token"]})
    assert await stored(dev, body["auth"]["client_token"])


@pytest.mark.parametrize(
    "body",
    [
        {"ttl": "soon"},
        {"ttl": -5},
        {"explicit_max_ttl": [1]},
        {"period": -1},
        {"num_uses": "many"},
        {"num_uses": -1},
        {"policies": 5},
        {"policies": [1, 2]},
        {"meta": "not-a-map"},
        {"meta": {"nested": {"a": 1}}},
        {"meta": {"list": ["a"]}},
        {"renewable": "maybe"},
        {"no_parent": "perhaps"},
        {"type": "ephemeral"},
        {"display_name": {"nested": True}},
        {"entity_alias": "someone"},
    ],
)
async def test_create_rejects_bad_input(dev: DevServer, body: dict[str, Any]) -> None:
    before = len(await dev.core.tokens.all_entries())
    status, answer = await call(dev, "POST", "auth/token/create", body)
    assert_error(status, answer, 400)
    assert len(await dev.core.tokens.all_entries()) == before


async def test_non_json_and_non_object_bodies_are_400(dev: DevServer) -> None:
    resp = await dev.client.post("/v1/auth/token/create", data=b"{nope", headers=dev.auth)
    assert resp.status == 400 and (await resp.json())["errors"]
    resp = await dev.client.post("/v1/auth/token/create", data=b"[1]", headers=dev.auth)
    assert resp.status == 400 and (await resp.json())["errors"]


# --- use counts ----------------------------------------------------------------------


async def test_num_uses_two_works_exactly_twice(dev: DevServer) -> None:
    await call(dev, "POST", "secret/data/app", {"data": {"k": "v"}})
    await put_policy(dev, "reader", rule("secret/data/*", "read"))
    auth = await create(dev, policies=["reader"], num_uses=2)
    token = auth["client_token"]
    assert (await lookup(dev, token))[1]["data"]["num_uses"] == 2
    for _ in range(2):
        status, body = await call(dev, "GET", "secret/data/app", token=token)
        assert status == 200 and body["data"]["data"] == {"k": "v"}, body
    status, body = await call(dev, "GET", "secret/data/app", token=token)
    assert (status, body) == (403, DENIED)
    assert not await stored(dev, token)
    assert await dev.core.tokens.lookup_accessor(auth["accessor"]) is None


async def test_limited_use_tokens_cannot_create_children(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    auth = await create(dev, policies=["creator"], num_uses=5)
    status, body = await call(dev, "POST", "auth/token/create", {}, token=auth["client_token"])
    assert_error(status, body, 400, "child tokens")


# --- batch tokens --------------------------------------------------------------------


async def test_batch_tokens(dev: DevServer) -> None:
    await call(dev, "POST", "secret/data/app", {"data": {"k": "v"}})
    await put_policy(dev, "reader", rule("secret/data/*", "read") + CREATOR)
    before = set(await dev.core.barrier.list("sys/token/id/"))
    status, body = await call(
        dev, "POST", "auth/token/create", {"type": "batch", "policies": ["reader"], "ttl": "10m"}
    )
    assert status == 200, body
    auth = body["auth"]
    token = auth["client_token"]
    assert token.startswith("hvb.")
    assert (auth["token_type"], auth["renewable"], auth["accessor"]) == ("batch", False, "")
    assert auth["policies"] == ["default", "reader"]
    assert set(await dev.core.barrier.list("sys/token/id/")) == before

    status, read = await call(dev, "GET", "secret/data/app", token=token)
    assert status == 200 and read["data"]["data"] == {"k": "v"}, read
    status, self_lookup = await call(dev, "GET", "auth/token/lookup-self", token=token)
    assert status == 200, self_lookup
    assert self_lookup["data"]["type"] == "batch"
    assert self_lookup["data"]["policies"] == ["default", "reader"]
    status, other = await lookup(dev, token)
    assert status == 200 and other["data"]["type"] == "batch", other

    status, body = await call(dev, "POST", "auth/token/renew-self", {}, token=token)
    assert_error(status, body, 400, "batch")
    status, body = await call(dev, "POST", "auth/token/renew", {"token": token})
    assert_error(status, body, 400, "batch")
    status, body = await call(dev, "POST", "auth/token/create", {}, token=token)
    assert_error(status, body, 400, "batch")
    status, body = await call(dev, "POST", "auth/token/revoke", {"token": token})
    assert_error(status, body, 400, "batch")
    status, body = await call(dev, "POST", "auth/token/revoke-self", {}, token=token)
    assert_error(status, body, 400, "batch")
    # a tampered batch token is just an invalid token
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    status, body = await call(dev, "GET", "secret/data/app", token=tampered)
    assert (status, body) == (403, DENIED)


async def test_batch_tokens_die_with_their_parent(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    parent = await create(dev, policies=["creator"])
    batch = await create(dev, token=parent["client_token"], type="batch")
    orphan_batch = await create(dev, type="batch", no_parent=True, policies=["web"])
    assert batch["orphan"] is False and orphan_batch["orphan"] is True
    status, body = await call(dev, "GET", "auth/token/lookup-self", token=batch["client_token"])
    assert status == 200, body
    await call(dev, "POST", "auth/token/revoke", {"token": parent["client_token"]})
    status, body = await call(dev, "GET", "auth/token/lookup-self", token=batch["client_token"])
    assert (status, body) == (403, DENIED)
    status, body = await lookup(dev, batch["client_token"])
    assert_error(status, body, 403)
    status, body = await call(
        dev, "GET", "auth/token/lookup-self", token=orphan_batch["client_token"]
    )
    assert status == 200, body


@pytest.mark.parametrize(
    "extra",
    [{"num_uses": 3}, {"period": 60}, {"policies": ["root"]}, {"explicit_max_ttl": 60}],
)
async def test_batch_tokens_refuse_service_only_features(
    dev: DevServer, extra: dict[str, Any]
) -> None:
    status, body = await call(dev, "POST", "auth/token/create", {"type": "batch", **extra})
    assert_error(status, body, 400, "batch")


# --- lookup ----------------------------------------------------------------------------


async def test_lookup_variants(dev: DevServer) -> None:
    auth = await create(dev, policies=["web"])
    token, accessor = auth["client_token"], auth["accessor"]

    status, body = await call(dev, "GET", "auth/token/lookup-self", token=token)
    assert status == 200 and body["data"]["id"] == token, body
    status, body = await call(dev, "POST", "auth/token/lookup-accessor", {"accessor": accessor})
    assert status == 200, body
    assert body["data"]["id"] == "" and body["data"]["accessor"] == accessor
    assert body["data"]["policies"] == ["default", "web"]
    # GET lookup with the token as a query parameter
    status, body = await call(dev, "GET", f"auth/token/lookup?token={token}")
    assert status == 200 and body["data"]["id"] == token, body

    status, body = await lookup(dev, "hvs.doesnotexist000000000000")
    assert_error(status, body, 403)
    status, body = await call(dev, "POST", "auth/token/lookup-accessor", {"accessor": "nope"})
    assert_error(status, body, 400)
    status, body = await call(dev, "POST", "auth/token/lookup-accessor", {})
    assert_error(status, body, 400, "accessor")
    status, body = await call(dev, "POST", "auth/token/lookup-accessor", {"accessor": ["x"]})
    assert_error(status, body, 400)


async def test_default_policy_allows_only_self_endpoints(dev: DevServer) -> None:
    victim = await create(dev, policies=["web"])
    mine = await create(dev, policies=["web"])
    token = mine["client_token"]
    denied = [
        ("POST", "auth/token/create", {}),
        ("POST", "auth/token/create-orphan", {}),
        ("POST", "auth/token/lookup", {"token": victim["client_token"]}),
        ("POST", "auth/token/lookup-accessor", {"accessor": victim["accessor"]}),
        ("POST", "auth/token/renew", {"token": victim["client_token"]}),
        ("POST", "auth/token/renew-accessor", {"accessor": victim["accessor"]}),
        ("POST", "auth/token/revoke", {"token": victim["client_token"]}),
        ("POST", "auth/token/revoke-accessor", {"accessor": victim["accessor"]}),
        ("POST", "auth/token/revoke-orphan", {"token": victim["client_token"]}),
        ("LIST", "auth/token/accessors", None),
        ("LIST", "auth/token/roles", None),
        ("POST", "auth/token/roles/r1", {"allowed_policies": ["web"]}),
        ("GET", "auth/token/roles/r1", None),
    ]
    for method, path, body in denied:
        status, answer = await call(dev, method, path, body, token=token)
        assert (status, answer) == (403, DENIED), (method, path)
    assert await stored(dev, victim["client_token"])
    for method, path in (
        ("GET", "auth/token/lookup-self"),
        ("POST", "auth/token/renew-self"),
    ):
        status, answer = await call(
            dev, method, path, {} if method == "POST" else None, token=token
        )
        assert status == 200, (path, answer)
    # no token at all
    status, answer = await call(dev, "GET", "auth/token/lookup-self", token=None)
    assert (status, answer) == (403, DENIED)
    status, answer = await call(dev, "GET", "auth/token/lookup-self", token="hvs.bogus")
    assert (status, answer) == (403, DENIED)


async def test_alternative_token_headers(dev: DevServer) -> None:
    for headers in (
        {"X-Vault-Token": dev.token},
        {"Authorization": f"Bearer {dev.token}"},
    ):
        status, body = await call(dev, "GET", "auth/token/lookup-self", token=None, headers=headers)
        assert status == 200 and body["data"]["policies"] == ["root"], body


# --- renew --------------------------------------------------------------------------------


async def test_renew_increments_and_explicit_max_cap(dev: DevServer) -> None:
    auth = await create(dev, policies=["web"], ttl=60, explicit_max_ttl=120)
    token = auth["client_token"]
    status, body = await call(dev, "POST", "auth/token/renew", {"token": token, "increment": 30})
    assert status == 200, body
    assert body["auth"]["lease_duration"] == 30
    assert body["auth"]["client_token"] == token
    assert 25 <= (await lookup(dev, token))[1]["data"]["ttl"] <= 30

    status, body = await call(dev, "POST", "auth/token/renew", {"token": token, "increment": "1h"})
    assert status == 200, body
    assert 115 <= body["auth"]["lease_duration"] <= 120
    assert body["warnings"], body
    data = (await lookup(dev, token))[1]["data"]
    assert 115 <= data["ttl"] <= 120
    assert "last_renewal_time" in data


async def test_renew_self_and_renew_accessor(dev: DevServer) -> None:
    auth = await create(dev, policies=["web"], ttl=60)
    token = auth["client_token"]
    status, body = await call(dev, "POST", "auth/token/renew-self", {"increment": 600}, token=token)
    assert status == 200 and body["auth"]["lease_duration"] == 600, body
    status, body = await call(
        dev, "POST", "auth/token/renew-accessor", {"accessor": auth["accessor"], "increment": 900}
    )
    assert status == 200, body
    assert body["auth"]["lease_duration"] == 900
    assert body["auth"]["client_token"] == ""
    assert 890 <= (await lookup(dev, token))[1]["data"]["ttl"] <= 900


@pytest.mark.parametrize(
    "body",
    [
        {"token": "hvs.notarealtoken0000000000", "increment": 10},
        {"increment": 10},
        {"token": "<token>", "increment": -10},
        {"token": "<token>", "increment": "later"},
    ],
)
async def test_renew_rejects_bad_input(dev: DevServer, body: dict[str, Any]) -> None:
    auth = await create(dev, policies=["web"], ttl=60)
    if body.get("token") == "<token>":
        body = {**body, "token": auth["client_token"]}
    status, answer = await call(dev, "POST", "auth/token/renew", body)
    assert_error(status, answer, 400)


# --- revoke ----------------------------------------------------------------------------------


async def tree(dev: DevServer) -> list[dict[str, Any]]:
    """root → a → b → c, each made by its parent."""
    await put_policy(dev, "creator", CREATOR)
    a = await create(dev, policies=["creator"])
    b = await create(dev, token=a["client_token"])
    c = await create(dev, token=b["client_token"])
    return [a, b, c]


async def test_revoke_takes_the_whole_subtree(dev: DevServer) -> None:
    a, b, c = await tree(dev)
    bystander = await create(dev, policies=["creator"])
    status, body = await call(dev, "POST", "auth/token/revoke", {"token": a["client_token"]})
    assert status == 204, body
    for gone in (a, b, c):
        assert not await stored(dev, gone["client_token"])
        assert await dev.core.tokens.lookup_accessor(gone["accessor"]) is None
        status, body = await call(dev, "GET", "auth/token/lookup-self", token=gone["client_token"])
        assert (status, body) == (403, DENIED)
    assert await stored(dev, bystander["client_token"])
    assert (
        await dev.core.barrier.list(
            f"sys/token/parent/{await dev.core.tokens.hash_id(a['client_token'])}/"
        )
        == []
    )
    # revoking an unknown token is not an error (as the reference)
    status, body = await call(dev, "POST", "auth/token/revoke", {"token": a["client_token"]})
    assert status == 204, body
    status, body = await call(dev, "POST", "auth/token/revoke", {})
    assert_error(status, body, 400)


async def test_revoke_self_and_revoke_accessor(dev: DevServer) -> None:
    a, b, c = await tree(dev)
    status, body = await call(dev, "POST", "auth/token/revoke-self", {}, token=b["client_token"])
    assert status == 204, body
    assert await stored(dev, a["client_token"])
    assert not await stored(dev, b["client_token"])
    assert not await stored(dev, c["client_token"])

    status, body = await call(
        dev, "POST", "auth/token/revoke-accessor", {"accessor": a["accessor"]}
    )
    assert status == 204, body
    assert not await stored(dev, a["client_token"])
    status, body = await call(dev, "POST", "auth/token/revoke-accessor", {"accessor": "missing"})
    assert_error(status, body, 400)


async def test_revoke_orphan_needs_sudo_and_keeps_children(dev: DevServer) -> None:
    a, b, c = await tree(dev)
    await put_policy(dev, "revoker", rule("auth/token/revoke-orphan", "update"))
    await put_policy(dev, "sudo-revoker", rule("auth/token/revoke-orphan", "update", "sudo"))
    plain = await create(dev, policies=["revoker"])
    status, body = await call(
        dev,
        "POST",
        "auth/token/revoke-orphan",
        {"token": a["client_token"]},
        token=plain["client_token"],
    )
    assert (status, body) == (403, DENIED)
    assert await stored(dev, a["client_token"])

    sudo = await create(dev, policies=["sudo-revoker"])
    status, body = await call(
        dev,
        "POST",
        "auth/token/revoke-orphan",
        {"token": a["client_token"]},
        token=sudo["client_token"],
    )
    assert status == 204, body
    assert not await stored(dev, a["client_token"])
    assert (await lookup(dev, b["client_token"]))[1]["data"]["orphan"] is True
    assert (await lookup(dev, c["client_token"]))[1]["data"]["orphan"] is False
    # b is still c's parent
    await call(dev, "POST", "auth/token/revoke", {"token": b["client_token"]})
    assert not await stored(dev, c["client_token"])

    status, body = await call(
        dev, "POST", "auth/token/revoke-orphan", {"token": "hvs.neverexisted00000000000"}
    )
    assert_error(status, body, 400)
    status, body = await call(dev, "POST", "auth/token/revoke-orphan", {})
    assert_error(status, body, 400)


async def test_accessors_list_needs_sudo(dev: DevServer) -> None:
    made = await create(dev, policies=["web"])
    await put_policy(dev, "lister", rule("auth/token/accessors", "list"))
    await put_policy(dev, "sudo-lister", rule("auth/token/accessors", "list", "sudo"))
    status, body = await call(dev, "LIST", "auth/token/accessors")
    assert status == 200, body
    assert made["accessor"] in body["data"]["keys"]
    plain = await create(dev, policies=["lister"])
    status, body = await call(dev, "LIST", "auth/token/accessors", token=plain["client_token"])
    assert (status, body) == (403, DENIED)
    sudo = await create(dev, policies=["sudo-lister"])
    status, body = await call(
        dev, "GET", "auth/token/accessors?list=true", token=sudo["client_token"]
    )
    assert status == 200 and sudo["accessor"] in body["data"]["keys"], body


# --- roles ------------------------------------------------------------------------------------


async def test_role_crud(dev: DevServer) -> None:
    status, body = await call(dev, "LIST", "auth/token/roles")
    assert status == 404, body
    status, body = await call(
        dev,
        "POST",
        "auth/token/roles/web-role",
        {"allowed_policies": "web,Metrics", "disallowed_policies": ["admin"], "orphan": True},
    )
    assert status == 204, body
    status, body = await call(dev, "GET", "auth/token/roles/web-role")
    assert status == 200, body
    data = body["data"]
    assert data["name"] == "web-role"
    assert data["allowed_policies"] == ["metrics", "web"]
    assert data["disallowed_policies"] == ["admin"]
    assert (data["orphan"], data["renewable"], data["token_type"]) == (
        True,
        True,
        "default-service",
    )

    status, body = await call(dev, "POST", "auth/token/roles/web-role", {"renewable": False})
    assert status == 204, body
    data = (await call(dev, "GET", "auth/token/roles/web-role"))[1]["data"]
    assert data["renewable"] is False and data["allowed_policies"] == ["metrics", "web"]

    status, body = await call(dev, "LIST", "auth/token/roles")
    assert status == 200 and body["data"]["keys"] == ["web-role"], body
    status, body = await call(dev, "DELETE", "auth/token/roles/web-role")
    assert status == 204, body
    status, body = await call(dev, "GET", "auth/token/roles/web-role")
    assert status == 404, body


@pytest.mark.parametrize(
    "body",
    [
        {"token_type": "forever"},
        {"token_num_uses": -1},
        {"token_period": "soon"},
        {"allowed_policies": 7},
        {"orphan": "sometimes"},
    ],
)
async def test_role_rejects_bad_input(dev: DevServer, body: dict[str, Any]) -> None:
    status, answer = await call(dev, "POST", "auth/token/roles/bad", body)
    assert_error(status, answer, 400)
    assert (await call(dev, "GET", "auth/token/roles/bad"))[0] == 404


async def test_create_with_role_applies_its_rules(dev: DevServer) -> None:
    await call(
        dev,
        "POST",
        "auth/token/roles/web-role",
        {"allowed_policies": ["web", "metrics"], "orphan": True, "renewable": False},
    )
    status, body = await call(dev, "POST", "auth/token/create/web-role", {})
    assert status == 200, body
    auth = body["auth"]
    assert auth["policies"] == ["default", "metrics", "web"]
    assert auth["orphan"] is True and auth["renewable"] is False
    data = (await lookup(dev, auth["client_token"]))[1]["data"]
    assert data["path"] == "auth/token/create/web-role"
    assert data["role"] == "web-role"

    status, body = await call(dev, "POST", "auth/token/create/web-role", {"policies": ["web"]})
    assert status == 200 and body["auth"]["policies"] == ["default", "web"], body
    status, body = await call(dev, "POST", "auth/token/create/web-role", {"policies": ["admin"]})
    assert_error(status, body, 400, "allowed")
    status, body = await call(dev, "POST", "auth/token/create/nope", {})
    assert_error(status, body, 400, "role")


async def test_role_without_policy_lists_cannot_escalate(dev: DevServer) -> None:
    await call(dev, "POST", "auth/token/roles/plain", {"orphan": True})
    await put_policy(dev, "role-user", rule("auth/token/create/plain", "update"))
    user = await create(dev, policies=["role-user", "web"])
    token = user["client_token"]
    status, body = await call(
        dev, "POST", "auth/token/create/plain", {"policies": ["admin"]}, token=token
    )
    assert_error(status, body, 400, "subset of parent")
    status, body = await call(
        dev, "POST", "auth/token/create/plain", {"policies": ["web"]}, token=token
    )
    assert status == 200, body
    assert body["auth"]["policies"] == ["default", "web"]
    assert body["auth"]["orphan"] is True


async def test_role_path_suffix(dev: DevServer) -> None:
    await call(dev, "POST", "auth/token/roles/sfx", {"path_suffix": "v2"})
    status, body = await call(dev, "POST", "auth/token/create/sfx", {"policies": ["web"]})
    assert status == 200, body
    data = (await lookup(dev, body["auth"]["client_token"]))[1]["data"]
    assert data["path"] == "auth/token/create/sfx/v2"


async def test_role_bound_cidrs_are_enforced(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    status, body = await call(
        dev, "POST", "auth/token/roles/far", {"token_bound_cidrs": ["10.0.0.0/8"]}
    )
    assert status == 204, body
    await call(dev, "POST", "auth/token/roles/near", {"token_bound_cidrs": "127.0.0.1,::1"})
    role = (await call(dev, "GET", "auth/token/roles/near"))[1]["data"]
    assert role["token_bound_cidrs"] == ["127.0.0.1/32", "::1/128"]

    status, body = await call(dev, "POST", "auth/token/create/far", {"policies": ["creator"]})
    far = body["auth"]["client_token"]
    status, body = await call(dev, "GET", "auth/token/lookup-self", token=far)
    assert (status, body) == (403, DENIED)
    data = (await lookup(dev, far))[1]["data"]
    assert data["bound_cidrs"] == ["10.0.0.0/8"]

    status, body = await call(dev, "POST", "auth/token/create/near", {"policies": ["creator"]})
    near = body["auth"]["client_token"]
    status, body = await call(dev, "GET", "auth/token/lookup-self", token=near)
    assert status == 200, body
    # children of a bound token are bound too
    child = await create(dev, token=near)
    assert (await lookup(dev, child["client_token"]))[1]["data"]["bound_cidrs"] == [
        "127.0.0.1/32",
        "::1/128",
    ]
    for bad in (["not-a-cidr"], ["10.0.0.0/33"], "300.1.1.1"):
        status, body = await call(dev, "POST", "auth/token/roles/bad", {"token_bound_cidrs": bad})
        assert_error(status, body, 400, "CIDR")


async def test_role_disallowed_policies(dev: DevServer) -> None:
    await call(dev, "POST", "auth/token/roles/no-admin", {"disallowed_policies": ["admin"]})
    status, body = await call(dev, "POST", "auth/token/create/no-admin", {"policies": ["admin"]})
    assert_error(status, body, 400, "admin")
    status, body = await call(dev, "POST", "auth/token/create/no-admin", {"policies": ["web"]})
    assert status == 200 and body["auth"]["policies"] == ["default", "web"], body


async def test_role_token_types(dev: DevServer) -> None:
    await call(dev, "POST", "auth/token/roles/db", {"token_type": "default-batch"})
    await call(dev, "POST", "auth/token/roles/bt", {"token_type": "batch"})
    await call(dev, "POST", "auth/token/roles/st", {"token_type": "service"})
    status, body = await call(dev, "POST", "auth/token/create/db", {"policies": ["web"]})
    assert status == 200 and body["auth"]["token_type"] == "batch", body
    assert body["auth"]["client_token"].startswith("hvb.")
    status, body = await call(
        dev, "POST", "auth/token/create/db", {"policies": ["web"], "type": "service"}
    )
    assert status == 200 and body["auth"]["token_type"] == "service", body
    status, body = await call(dev, "POST", "auth/token/create/bt", {"policies": ["web"]})
    assert status == 200 and body["auth"]["token_type"] == "batch", body
    status, body = await call(
        dev, "POST", "auth/token/create/bt", {"policies": ["web"], "type": "service"}
    )
    assert_error(status, body, 400)
    status, body = await call(
        dev, "POST", "auth/token/create/st", {"policies": ["web"], "type": "batch"}
    )
    assert_error(status, body, 400)


# --- expiry and storage -----------------------------------------------------------------------


async def test_expired_tokens_leave_storage_without_being_used(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    short = await create(dev, policies=["creator"], ttl=2)
    child = await create(dev, token=short["client_token"], ttl="1h")
    assert await stored(dev, short["client_token"])
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and await stored(dev, short["client_token"]):
        await asyncio.sleep(0.2)
    assert not await stored(dev, short["client_token"])
    assert not await stored(dev, child["client_token"])
    tokens = dev.core.tokens
    assert await tokens.lookup_accessor(short["accessor"]) is None
    assert await tokens.lookup_accessor(child["accessor"]) is None
    accessors = await dev.core.barrier.list("sys/token/accessor/")
    assert short["accessor"] not in accessors and child["accessor"] not in accessors


async def test_renewal_postpones_expiry(dev: DevServer) -> None:
    auth = await create(dev, policies=["web"], ttl=1)
    await call(dev, "POST", "auth/token/renew-self", {"increment": 60}, token=auth["client_token"])
    await asyncio.sleep(2)
    assert await stored(dev, auth["client_token"])


async def all_physical_keys(dev: DevServer, prefix: str = "") -> list[str]:
    found: list[str] = []
    for name in await dev.core.physical.list(prefix):
        if name.endswith("/"):
            found.extend(await all_physical_keys(dev, prefix + name))
        else:
            found.append(prefix + name)
    return found


async def test_token_ids_are_never_stored_in_plaintext(dev: DevServer) -> None:
    await put_policy(dev, "creator", CREATOR)
    made = [
        (await create(dev, policies=["creator"]))["client_token"],
        (await create(dev, id="custom-token-id-4711"))["client_token"],
    ]
    made.append((await create(dev, token=made[0]))["client_token"])
    status, body = await call(
        dev, "POST", "auth/token/create", {}, headers={"X-Service-Wrap-TTL": "5m"}
    )
    assert status == 200, body
    made.append(body["wrap_info"]["token"])
    await call(dev, "POST", "cubbyhole/note", {"v": "x"}, token=made[0])
    made.append(dev.token)

    keys = await all_physical_keys(dev)
    assert any(key.startswith("sys/token/id/") for key in keys)
    plains = []
    for key in keys:
        entry = await dev.core.physical.get(key)
        assert entry is not None
        try:
            value = await dev.core.barrier.get(key)
        except StorageError:
            plains.append(entry.value)  # not a barrier value: check the raw bytes
            continue
        assert value is not None
        plains.append(value.value)
    for token in made:
        needle = token.encode()
        assert all(needle not in plain for plain in plains), token
        assert all(token not in key for key in keys), token
    hashes = {key.rsplit("/", 1)[1] for key in keys if key.startswith("sys/token/id/")}
    for token in made:
        assert await dev.core.tokens.hash_id(token) in hashes
