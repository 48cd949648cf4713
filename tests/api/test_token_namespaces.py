"""The token store's tenant boundary (issue 14, item 1).

A tenant admin (a token of namespace ``a`` whose policy there allows
everything, sudo included) names tokens of the root namespace (``a``'s parent),
of its child ``a/child`` and of its sibling ``b`` through every ``auth/token/*``
path that takes a token or an accessor, and through ``sys/capabilities`` and
``sys/capabilities-accessor``. By value it reaches its namespace and below; by
accessor its namespace only; anything else answers as an unknown token would.
"""

from __future__ import annotations

import re
import secrets
import string
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from node.barrier.view import BarrierView
from node.tokens.entry import TokenEntry
from node.tokens.ids import namespace_suffix
from tests.api.helpers import ROOT
from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer

ADMIN_POLICY = 'path "*" { capabilities = ["create","read","update","delete","list","sudo"] }'


@dataclass(frozen=True)
class Token:
    token: str
    accessor: str


@dataclass(frozen=True)
class World:
    """Namespaces ``a``, ``a/child`` and ``b``; a token in each and in root; ``a``'s admin."""

    ids: dict[str, str]
    admin: Token
    root: Token
    a: Token
    child: Token
    b: Token


def ns_header(namespace: str) -> dict[str, str]:
    return {"X-Vault-Namespace": namespace} if namespace else {}


async def as_admin(
    dev: DevServer, world: World, method: str, path: str, body: Any = None, namespace: str = "a"
) -> tuple[int, dict[str, Any]]:
    return await call(dev, method, path, body, world.admin.token, headers=ns_header(namespace))


async def mint(dev: DevServer, namespace: str, **fields: Any) -> Token:
    """A token of ``namespace``, created by the root token there."""
    fields.setdefault("ttl", "1h")
    fields.setdefault("policies", ["default"])  # not the root token's own "root"
    status, body = await call(
        dev, "POST", "auth/token/create", fields, ROOT, headers=ns_header(namespace)
    )
    assert status == 200, body
    return Token(body["auth"]["client_token"], body["auth"]["accessor"])


async def alive(dev: DevServer, token: Token) -> bool:
    return await dev.core.tokens.lookup(token.token) is not None


@pytest.fixture
async def world(dev: DevServer) -> World:
    ids = {"": "root"}
    for parent, name in (("", "a"), ("a", "child"), ("", "b")):
        status, body = await call(
            dev, "POST", f"sys/namespaces/{name}", None, ROOT, headers=ns_header(parent)
        )
        assert status == 200, body
        ids[body["data"]["path"].rstrip("/")] = body["data"]["id"]
    status, body = await call(
        dev, "PUT", "sys/policies/acl/admin", {"policy": ADMIN_POLICY}, headers=ns_header("a")
    )
    assert status == 204, body
    return World(
        ids=ids,
        admin=await mint(dev, "a", policies=["admin"]),
        root=await mint(dev, ""),
        a=await mint(dev, "a"),
        child=await mint(dev, "a/child"),
        b=await mint(dev, "b"),
    )


def refused(status: int, body: dict[str, Any], expected: int, message: str) -> None:
    assert status == expected, body
    assert body.get("errors") == [message], body


# -- the shape of IDs and accessors --------------------------------------------------


async def test_ids_and_accessors_carry_the_namespace_id(dev: DevServer, world: World) -> None:
    base62 = "[A-Za-z0-9]"
    for token, namespace in ((world.a, "a"), (world.child, "a/child"), (world.b, "b")):
        suffix = re.escape(world.ids[namespace])
        assert re.fullmatch(rf"hvs\.{base62}{{24}}\.{suffix}", token.token), token
        assert re.fullmatch(rf"{base62}{{24}}\.{suffix}", token.accessor), token
    # the root namespace keeps today's shape
    assert re.fullmatch(rf"hvs\.{base62}{{24}}", world.root.token)
    assert re.fullmatch(rf"{base62}{{24}}", world.root.accessor)
    # a chosen ID gets the suffix too; batch tokens carry it after their sealed body
    custom = await mint(dev, "a", id="chosen-id")
    assert custom.token == f"chosen-id.{world.ids['a']}"
    status, body = await call(
        dev,
        "POST",
        "auth/token/create",
        {"type": "batch", "policies": ["default"]},
        ROOT,
        headers=ns_header("a"),
    )
    assert status == 200, body
    batch = body["auth"]["client_token"]
    assert batch.startswith("hvb.") and batch.endswith(f".{world.ids['a']}")
    for token in (custom.token, batch):
        status, body = await call(
            dev, "GET", "auth/token/lookup-self", None, token, headers=ns_header("a")
        )
        assert status == 200 and body["data"]["namespace_path"] == "a/", body
    # a batch token's suffix cannot be swapped for another namespace's
    forged = batch.removesuffix(world.ids["a"]) + world.ids["b"]
    status, _ = await call(
        dev, "GET", "auth/token/lookup-self", None, forged, headers=ns_header("b")
    )
    assert status == 403


@pytest.mark.parametrize(
    ("value", "suffix"),
    [
        ("hvs.AbCdEfGhIjKlMnOpQrStUvWx", ""),
        ("hvs.AbCdEfGhIjKlMnOpQrStUvWx.G6fup", "G6fup"),
        ("AbCdEfGhIjKlMnOpQrStUvWx", ""),
        ("AbCdEfGhIjKlMnOpQrStUvWx.G6fup", "G6fup"),
        ("hvb.sealed-body_x", ""),
        ("hvb.sealed-body_x.G6fup", "G6fup"),
        ("s.legacyAbCdEfGhIjKlMnOp", ""),
        ("dev-root", ""),
    ],
)
def test_namespace_suffix(value: str, suffix: str) -> None:
    assert namespace_suffix(value) == suffix


async def test_login_in_a_namespace_mints_its_tokens(dev: DevServer, world: World) -> None:
    for method, path, body in (
        ("POST", "sys/auth/userpass", {"type": "userpass"}),
        ("POST", "auth/userpass/users/alice", {"password": "pw-alice", "token_ttl": "1h"}),
    ):
        status, reply = await as_admin(dev, world, method, path, body)
        assert status == 204, reply
    status, reply = await call(
        dev,
        "POST",
        "auth/userpass/login/alice",
        {"password": "pw-alice"},
        None,
        headers=ns_header("a"),
    )
    assert status == 200, reply
    suffix = f".{world.ids['a']}"
    login = Token(reply["auth"]["client_token"], reply["auth"]["accessor"])
    assert login.token.endswith(suffix) and login.accessor.endswith(suffix)
    status, reply = await call(
        dev, "POST", "auth/token/revoke-accessor", {"accessor": login.accessor}
    )
    assert status == 400 and await alive(dev, login)


async def test_create_with_a_parent_in_a_namespace(dev: DevServer, world: World) -> None:
    status, body = await as_admin(dev, world, "POST", "auth/token/create", {"ttl": "1h"})
    assert status == 200, body
    child = Token(body["auth"]["client_token"], body["auth"]["accessor"])
    assert child.token.endswith(f".{world.ids['a']}") and not body["auth"]["orphan"]
    # the parent link holds: revoking the admin revokes its child
    status, _ = await call(
        dev, "POST", "auth/token/revoke-self", None, world.admin.token, headers=ns_header("a")
    )
    assert status == 204
    assert not await alive(dev, child)


# -- by token value: the namespace and below ---------------------------------------------


async def test_lookup(dev: DevServer, world: World) -> None:
    for target, ns_path in ((world.a, "a/"), (world.child, "a/child/")):
        status, body = await as_admin(
            dev, world, "POST", "auth/token/lookup", {"token": target.token}
        )
        assert status == 200 and body["data"]["namespace_path"] == ns_path, body
    for target in (world.root, world.b):
        status, body = await as_admin(
            dev, world, "POST", "auth/token/lookup", {"token": target.token}
        )
        refused(status, body, 403, "bad token")
    # root reaches a descendant's token by value; the child namespace does not reach up
    status, _ = await call(dev, "POST", "auth/token/lookup", {"token": world.a.token})
    assert status == 200
    status, body = await as_admin(
        dev, world, "POST", "auth/token/lookup", {"token": world.a.token}, namespace="a/child"
    )
    refused(status, body, 403, "bad token")


async def test_renew(dev: DevServer, world: World) -> None:
    for target in (world.root, world.b):
        status, body = await as_admin(
            dev, world, "POST", "auth/token/renew", {"token": target.token, "increment": "2h"}
        )
        refused(status, body, 400, "token not found")
    status, body = await as_admin(
        dev, world, "POST", "auth/token/renew", {"token": world.child.token, "increment": "2h"}
    )
    assert status == 200 and body["auth"]["accessor"] == world.child.accessor, body


async def test_revoke(dev: DevServer, world: World) -> None:
    for target in (world.root, world.b):
        status, _ = await as_admin(dev, world, "POST", "auth/token/revoke", {"token": target.token})
        assert status == 204  # as for an unknown token: nothing to do
        assert await alive(dev, target)
    status, _ = await as_admin(
        dev, world, "POST", "auth/token/revoke", {"token": world.child.token}
    )
    assert status == 204
    assert not await alive(dev, world.child)


async def test_revoke_orphan(dev: DevServer, world: World) -> None:
    for target in (world.root, world.b):
        status, body = await as_admin(
            dev, world, "POST", "auth/token/revoke-orphan", {"token": target.token}
        )
        refused(status, body, 400, "token to revoke not found")
        assert await alive(dev, target)
    status, _ = await as_admin(
        dev, world, "POST", "auth/token/revoke-orphan", {"token": world.child.token}
    )
    assert status == 204
    assert not await alive(dev, world.child)


async def test_capabilities_by_token(dev: DevServer, world: World) -> None:
    for target in (world.root, world.b):
        status, body = await as_admin(
            dev, world, "POST", "sys/capabilities", {"token": target.token, "paths": ["x"]}
        )
        refused(status, body, 400, "invalid token")
    status, body = await as_admin(
        dev, world, "POST", "sys/capabilities", {"token": world.child.token, "paths": ["x"]}
    )
    assert status == 200 and body["capabilities"] == ["deny"], body


# -- by accessor: the namespace only ------------------------------------------------------


async def test_lookup_accessor(dev: DevServer, world: World) -> None:
    path = "auth/token/lookup-accessor"
    status, body = await as_admin(dev, world, "POST", path, {"accessor": world.a.accessor})
    assert status == 200 and body["data"]["accessor"] == world.a.accessor and not body["data"]["id"]
    for target in (world.root, world.child, world.b):
        status, body = await as_admin(dev, world, "POST", path, {"accessor": target.accessor})
        refused(status, body, 400, "invalid accessor")
    # the parent tenant addresses its child namespace to name the child's accessors
    status, body = await as_admin(
        dev, world, "POST", path, {"accessor": world.child.accessor}, namespace="a/child"
    )
    assert status == 200 and body["data"]["namespace_path"] == "a/child/", body
    # the root namespace names only root-namespace accessors
    status, body = await call(dev, "POST", path, {"accessor": world.a.accessor})
    refused(status, body, 400, "invalid accessor")
    status, _ = await call(dev, "POST", path, {"accessor": world.root.accessor})
    assert status == 200


async def test_renew_accessor(dev: DevServer, world: World) -> None:
    path = "auth/token/renew-accessor"
    for target in (world.root, world.child, world.b):
        before = await dev.core.tokens.lookup(target.token)
        status, body = await as_admin(
            dev, world, "POST", path, {"accessor": target.accessor, "increment": "2h"}
        )
        refused(status, body, 400, "invalid accessor")
        assert await dev.core.tokens.lookup(target.token) == before
    status, body = await as_admin(
        dev, world, "POST", path, {"accessor": world.a.accessor, "increment": "2h"}
    )
    assert status == 200 and body["auth"]["accessor"] == world.a.accessor, body


async def test_revoke_accessor(dev: DevServer, world: World) -> None:
    path = "auth/token/revoke-accessor"
    for target in (world.root, world.child, world.b):
        status, body = await as_admin(dev, world, "POST", path, {"accessor": target.accessor})
        refused(status, body, 400, "invalid accessor")
        assert await alive(dev, target)
    status, _ = await as_admin(dev, world, "POST", path, {"accessor": world.a.accessor})
    assert status == 204
    assert not await alive(dev, world.a)


async def test_capabilities_accessor(dev: DevServer, world: World) -> None:
    path = "sys/capabilities-accessor"
    for target in (world.root, world.child, world.b):
        status, body = await as_admin(
            dev, world, "POST", path, {"accessor": target.accessor, "paths": ["x"]}
        )
        refused(status, body, 400, "invalid accessor")
    status, body = await as_admin(
        dev, world, "POST", path, {"accessor": world.admin.accessor, "paths": ["x"]}
    )
    assert status == 200 and "sudo" in body["capabilities"], body


async def test_list_accessors(dev: DevServer, world: World) -> None:
    status, body = await as_admin(dev, world, "LIST", "auth/token/accessors")
    assert status == 200, body
    assert set(body["data"]["keys"]) == {world.admin.accessor, world.a.accessor}
    status, body = await as_admin(dev, world, "LIST", "auth/token/accessors", namespace="a/child")
    assert status == 200 and body["data"]["keys"] == [world.child.accessor], body
    status, body = await call(dev, "LIST", "auth/token/accessors")
    keys = set(body["data"]["keys"])
    assert world.root.accessor in keys
    assert not keys & {
        world.admin.accessor,
        world.a.accessor,
        world.child.accessor,
        world.b.accessor,
    }


# -- roles are the namespace's own ----------------------------------------------------


async def test_roles(dev: DevServer, world: World) -> None:
    status, _ = await call(dev, "POST", "auth/token/roles/ops", {"allowed_policies": ["root-only"]})
    assert status == 204
    status, body = await as_admin(dev, world, "GET", "auth/token/roles/ops")
    assert status == 404, body
    status, body = await as_admin(dev, world, "POST", "auth/token/create/ops", {})
    refused(status, body, 400, "unknown role ops")
    status, _ = await as_admin(dev, world, "LIST", "auth/token/roles")
    assert status == 404
    # a tenant's role of the same name changes nothing outside the tenant
    status, _ = await as_admin(
        dev, world, "POST", "auth/token/roles/ops", {"allowed_policies": ["tenant"]}
    )
    assert status == 204
    status, body = await call(dev, "GET", "auth/token/roles/ops")
    assert body["data"]["allowed_policies"] == ["root-only"]
    status, body = await as_admin(dev, world, "POST", "auth/token/create/ops", {"ttl": "1h"})
    assert status == 200 and body["auth"]["policies"] == ["default", "tenant"], body
    assert body["auth"]["client_token"].endswith(f".{world.ids['a']}")
    status, _ = await as_admin(dev, world, "DELETE", "auth/token/roles/ops")
    assert status == 204
    status, body = await call(dev, "GET", "auth/token/roles/ops")
    assert status == 200 and body["data"]["allowed_policies"] == ["root-only"]
    # a namespace's roles go with it
    status, _ = await call(
        dev, "POST", "auth/token/roles/ops", {"allowed_policies": ["x"]}, headers=ns_header("b")
    )
    assert status == 204
    where = f"namespaces/{world.ids['b']}/"
    assert await dev.core.barrier.list(where + "sys/token/roles/") == ["ops"]
    status, _ = await call(dev, "DELETE", "sys/namespaces/b")
    assert status == 204
    assert await dev.core.barrier.list(where) == []


# -- tokens minted before suffixes ----------------------------------------------------


async def test_tokens_without_suffix_keep_working(dev: DevServer, world: World) -> None:
    """A namespace token stored in the earlier shape (no suffix) is still scoped by its entry."""
    alphabet = string.ascii_letters + string.digits
    token_id = "hvs." + "".join(secrets.choice(alphabet) for _ in range(24))
    accessor = "".join(secrets.choice(alphabet) for _ in range(24))
    tokens = dev.core.tokens
    key = await tokens.hash_id(token_id)
    entry = TokenEntry(
        key=key,
        accessor=accessor,
        policies=["default"],
        display_name="token",
        creation_time=time.time(),
        expire_time=time.time() + 3600,
        creation_ttl=3600,
        cubbyhole_id=secrets.token_hex(16),
        namespace_id=world.ids["a"],
    )
    view = BarrierView(dev.core.barrier, "sys/token/")
    await view.put_json(f"id/{key}", entry.to_json())
    await view.put_json(f"accessor/{accessor}", {"key": key})
    legacy = Token(token_id, accessor)

    status, body = await call(
        dev, "GET", "auth/token/lookup-self", None, legacy.token, headers=ns_header("a")
    )
    assert status == 200 and body["data"]["namespace_path"] == "a/", body
    status, body = await as_admin(
        dev, world, "POST", "auth/token/lookup-accessor", {"accessor": legacy.accessor}
    )
    assert status == 200, body
    status, body = await as_admin(dev, world, "LIST", "auth/token/accessors")
    assert legacy.accessor in body["data"]["keys"]
    status, body = await call(dev, "LIST", "auth/token/accessors")
    assert legacy.accessor not in body["data"]["keys"]
    for namespace in ("", "b"):
        status, body = await call(
            dev,
            "POST",
            "auth/token/revoke-accessor",
            {"accessor": legacy.accessor},
            headers=ns_header(namespace),
        )
        refused(status, body, 400, "invalid accessor")
    assert await alive(dev, legacy)
