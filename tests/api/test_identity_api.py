"""The ``identity/`` endpoints over HTTP, and the service the core asks at login."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from openapi_spec_validator import validate

from node.auth.common.token_settings import TokenSettings
from node.identity.service import IdentityService
from node.logical.request import Operation, Request
from node.logical.response import Login, Response
from node.routing.mounts import MountEntry, new_mount
from sdk.errors import InvalidRequestError

if TYPE_CHECKING:
    from tests.conftest import DevServer

ENTITY_FIELDS = {
    "id",
    "name",
    "policies",
    "metadata",
    "aliases",
    "direct_group_ids",
    "group_ids",
    "inherited_group_ids",
    "disabled",
    "namespace_id",
    "creation_time",
    "last_update_time",
    "merged_entity_ids",
}
GROUP_FIELDS = {
    "id",
    "name",
    "policies",
    "member_entity_ids",
    "member_group_ids",
    "parent_group_ids",
    "type",
    "alias",
    "metadata",
    "namespace_id",
    "creation_time",
    "last_update_time",
    "modify_index",
}


@pytest.fixture
async def dev_identity(dev: DevServer) -> DevServer:
    """The dev server with ``identity/`` mounted (until the core mounts it by default)."""
    if dev.core.router.match("identity/") is None:
        entry = new_mount("identity/", "identity", description="identity store")
        try:
            await dev.core.mounts.enable(entry)
        except InvalidRequestError:  # reserved for secret mounts: mount without persisting
            dev.core.mounts._mount(entry)
    return dev


async def call(
    dev: DevServer, method: str, path: str, body: Any = None, namespace: str = ""
) -> tuple[int, Any]:
    headers = {**dev.auth, **({"X-Service-Namespace": namespace} if namespace else {})}
    resp = await dev.client.request(method, f"/v1/identity/{path}", json=body, headers=headers)
    text = await resp.text()
    return resp.status, (json.loads(text) if text else None)


async def ok(dev: DevServer, method: str, path: str, body: Any = None, namespace: str = "") -> Any:
    status, answer = await call(dev, method, path, body, namespace)
    assert status in (200, 204), (method, path, status, answer)
    return answer["data"] if status == 200 else None


async def refused(
    dev: DevServer,
    method: str,
    path: str,
    body: Any,
    status: int,
    text: str = "",
    namespace: str = "",
) -> None:
    got, answer = await call(dev, method, path, body, namespace)
    assert got == status, (method, path, got, answer)
    assert isinstance(answer["errors"], list), answer
    assert all(text in message for message in answer["errors"][:1]), answer


def token_mount(dev: DevServer) -> MountEntry:
    return next(e for e in dev.core.mounts.entries("auth") if e.path == "token/")


def service(dev: DevServer) -> IdentityService:
    found = dev.core.identity
    assert isinstance(found, IdentityService)
    return found


# -- entities ----------------------------------------------------------------------------


async def test_entity_lifecycle(dev_identity: DevServer) -> None:
    dev = dev_identity
    made = await ok(
        dev, "POST", "entity", {"name": "alice", "policies": "a,b", "metadata": {"team": "ops"}}
    )
    assert set(made) == {"id", "name", "aliases"} and made["name"] == "alice"
    entity_id = made["id"]

    read = await ok(dev, "GET", f"entity/id/{entity_id}")
    assert set(read) >= ENTITY_FIELDS
    assert (read["name"], read["policies"], read["metadata"]) == (
        "alice",
        ["a", "b"],
        {"team": "ops"},
    )
    assert (read["disabled"], read["namespace_id"], read["aliases"]) == (False, "root", [])
    assert await ok(dev, "GET", "entity/name/ALICE") == await ok(
        dev, "GET", f"entity/id/{entity_id}"
    )

    # a write naming an existing entity updates it (204)
    assert await ok(dev, "POST", "entity", {"name": "alice", "disabled": True}) is None
    assert await ok(dev, "POST", f"entity/id/{entity_id}", {"policies": ["c"]}) is None
    read = await ok(dev, "GET", f"entity/id/{entity_id}")
    assert (read["policies"], read["disabled"]) == (["c"], True)
    assert read["last_update_time"] >= read["creation_time"]

    bob = await ok(dev, "POST", "entity/name/bob", {"policies": ["p"]})
    assert bob["name"] == "bob"
    listed = await ok(dev, "LIST", "entity/id")
    assert sorted(listed["keys"]) == sorted([entity_id, bob["id"]])
    assert listed["key_info"][entity_id] == {"name": "alice"}
    names = await ok(dev, "GET", "entity/name?list=true")
    assert names["keys"] == ["alice", "bob"]

    assert await ok(dev, "DELETE", "entity/name/bob") is None
    assert await ok(dev, "DELETE", f"entity/id/{entity_id}") is None
    assert await ok(dev, "DELETE", f"entity/id/{entity_id}") is None  # idempotent
    await refused(dev, "GET", f"entity/id/{entity_id}", None, 404)
    await refused(dev, "GET", "entity/name/bob", None, 404)
    await refused(dev, "LIST", "entity/id", None, 404)


async def test_entity_validation(dev_identity: DevServer) -> None:
    dev = dev_identity
    first = await ok(dev, "POST", "entity", {"name": "one"})
    await ok(dev, "POST", "entity", {"name": "two"})
    await refused(
        dev, "POST", "entity", {"name": "x", "policies": ["root"]}, 400, "cannot contain root"
    )
    await refused(dev, "POST", f"entity/id/{first['id']}", {"name": "two"}, 400, "already in use")
    await refused(dev, "POST", "entity/id/missing", {"policies": ["a"]}, 400, "entity not found")
    await refused(dev, "POST", "entity", {"name": "y", "metadata": ["novalue"]}, 400, "metadata")
    await refused(dev, "POST", "entity", {"name": "y", "metadata": {"bad key": "v"}}, 400)
    await refused(dev, "POST", "entity", {"name": "y", "disabled": "maybe"}, 400)
    await refused(dev, "POST", "entity", {"name": "y", "policies": {"a": 1}}, 400)
    await refused(dev, "POST", "entity", {"name": ["list"]}, 400)
    status, _ = await call(dev, "DELETE", "entity")
    assert status == 405


# -- entity aliases ----------------------------------------------------------------------


async def test_entity_alias_endpoints(dev_identity: DevServer) -> None:
    dev = dev_identity
    accessor = token_mount(dev).accessor
    entity = await ok(dev, "POST", "entity", {"name": "carol"})
    body = {"name": "carol", "mount_accessor": accessor, "canonical_id": entity["id"]}
    made = await ok(dev, "POST", "entity-alias", body)
    assert made["canonical_id"] == entity["id"]
    alias_id = made["id"]

    read = await ok(dev, "GET", f"entity-alias/id/{alias_id}")
    assert (read["name"], read["mount_accessor"], read["canonical_id"]) == (
        "carol",
        accessor,
        entity["id"],
    )
    assert (read["mount_type"], read["mount_path"], read["namespace_id"]) == (
        "token",
        "auth/token/",
        "root",
    )
    (shown,) = (await ok(dev, "GET", f"entity/id/{entity['id']}"))["aliases"]
    assert shown["id"] == alias_id and shown["mount_type"] == "token"

    await refused(
        dev, "POST", "entity-alias", {**body, "name": "other"}, 400, "Alias already exists"
    )
    await refused(
        dev,
        "POST",
        "entity-alias",
        {"name": "x", "mount_accessor": "nope"},
        400,
        "invalid mount accessor",
    )
    await refused(dev, "POST", "entity-alias", {"name": "x"}, 400, "'id' or 'mount_accessor'")
    await refused(
        dev,
        "POST",
        "entity-alias",
        {**body, "canonical_id": "nope", "name": "z"},
        400,
        "invalid canonical ID",
    )
    await refused(dev, "POST", "entity-alias/id/nope", {"name": "x"}, 400, "invalid alias ID")

    updated = await ok(dev, "POST", f"entity-alias/id/{alias_id}", {"custom_metadata": {"k": "v"}})
    assert updated == {"id": alias_id, "canonical_id": entity["id"]}
    assert (await ok(dev, "GET", f"entity-alias/id/{alias_id}"))["custom_metadata"] == {"k": "v"}
    assert await ok(dev, "POST", f"entity-alias/id/{alias_id}", {}) is None

    listed = await ok(dev, "LIST", "entity-alias/id")
    assert listed["keys"] == [alias_id]
    assert listed["key_info"][alias_id]["mount_type"] == "token"

    # an alias without canonical_id gets a new entity
    auto = await ok(dev, "POST", "entity-alias", {"name": "dave", "mount_accessor": accessor})
    assert auto["canonical_id"] != entity["id"]

    assert await ok(dev, "DELETE", f"entity-alias/id/{alias_id}") is None
    assert (await ok(dev, "GET", f"entity/id/{entity['id']}"))["aliases"] == []
    await refused(dev, "GET", f"entity-alias/id/{alias_id}", None, 404)
    # deleting an entity deletes its aliases
    assert await ok(dev, "DELETE", f"entity/id/{auto['canonical_id']}") is None
    await refused(dev, "LIST", "entity-alias/id", None, 404)


# -- groups ------------------------------------------------------------------------------


async def test_group_endpoints(dev_identity: DevServer) -> None:
    dev = dev_identity
    member = await ok(dev, "POST", "entity", {"name": "erin"})
    leaf = await ok(
        dev,
        "POST",
        "group",
        {"name": "leaf", "policies": ["l"], "member_entity_ids": [member["id"]]},
    )
    assert set(leaf) == {"id", "name"}
    top = await ok(
        dev,
        "POST",
        "group",
        {"name": "top", "member_group_ids": leaf["id"], "metadata": {"a": "b"}},
    )

    read = await ok(dev, "GET", f"group/id/{leaf['id']}")
    assert set(read) >= GROUP_FIELDS
    assert (read["type"], read["member_entity_ids"], read["parent_group_ids"]) == (
        "internal",
        [member["id"]],
        [top["id"]],
    )
    assert read["alias"] == {} and read["policies"] == ["l"]
    top_read = await ok(dev, "GET", "group/name/top")
    assert (top_read["member_group_ids"], top_read["metadata"]) == ([leaf["id"]], {"a": "b"})

    entity = await ok(dev, "GET", f"entity/id/{member['id']}")
    assert (entity["direct_group_ids"], entity["inherited_group_ids"]) == (
        [leaf["id"]],
        [top["id"]],
    )
    assert entity["group_ids"] == [leaf["id"], top["id"]]

    assert await ok(dev, "POST", "group", {"name": "top", "policies": "t"}) is None
    assert await ok(dev, "POST", f"group/id/{top['id']}", {"policies": ["t", "u"]}) is None
    assert await ok(dev, "POST", "group/name/top", {"metadata": {}}) is None
    top_read = await ok(dev, "GET", f"group/id/{top['id']}")
    assert (top_read["policies"], top_read["metadata"]) == (["t", "u"], {})

    listed = await ok(dev, "LIST", "group/id")
    assert sorted(listed["keys"]) == sorted([leaf["id"], top["id"]])
    assert listed["key_info"][leaf["id"]] == {
        "name": "leaf",
        "num_member_entities": 1,
        "num_parent_groups": 1,
    }
    assert (await ok(dev, "LIST", "group/name"))["keys"] == ["leaf", "top"]

    await refused(
        dev, "POST", f"group/id/{leaf['id']}", {"member_group_ids": [top["id"]]}, 400, "cyclic"
    )
    await refused(
        dev,
        "POST",
        f"group/id/{leaf['id']}",
        {"member_group_ids": [leaf["id"]]},
        400,
        "same as the ID",
    )
    await refused(
        dev, "POST", "group", {"name": "x", "member_entity_ids": ["nope"]}, 400, "invalid entity ID"
    )
    await refused(
        dev,
        "POST",
        "group",
        {"name": "x", "member_group_ids": ["nope"]},
        400,
        "invalid member group ID",
    )
    await refused(
        dev,
        "POST",
        "group",
        {"name": "x", "type": "external", "member_entity_ids": [member["id"]]},
        400,
        "external",
    )
    await refused(dev, "POST", "group", {"name": "x", "type": "weird"}, 400, "invalid group type")
    await refused(
        dev, "POST", f"group/id/{top['id']}", {"type": "external"}, 400, "cannot be changed"
    )
    await refused(dev, "POST", "group/id/nope", {"policies": ["a"]}, 400, "invalid group ID")
    await refused(dev, "POST", "group", {"id": "nope"}, 400, "invalid group ID")
    await refused(
        dev, "POST", "group", {"name": "x", "policies": ["root"]}, 400, "cannot contain root"
    )

    # deleting an entity or a group removes it from the groups that listed it
    assert await ok(dev, "DELETE", f"entity/id/{member['id']}") is None
    assert (await ok(dev, "GET", f"group/id/{leaf['id']}"))["member_entity_ids"] == []
    assert await ok(dev, "DELETE", "group/name/leaf") is None
    assert (await ok(dev, "GET", f"group/id/{top['id']}"))["member_group_ids"] == []
    assert await ok(dev, "DELETE", f"group/id/{top['id']}") is None
    await refused(dev, "GET", f"group/id/{top['id']}", None, 404)
    await refused(dev, "LIST", "group/name", None, 404)


async def test_group_alias_endpoints(dev_identity: DevServer) -> None:
    dev = dev_identity
    accessor = token_mount(dev).accessor
    ext = await ok(dev, "POST", "group", {"name": "ext", "type": "external", "policies": ["e"]})
    internal = await ok(dev, "POST", "group", {"name": "int"})
    made = await ok(
        dev,
        "POST",
        "group-alias",
        {"name": "devs", "mount_accessor": accessor, "canonical_id": ext["id"]},
    )
    assert made["canonical_id"] == ext["id"]
    alias_id = made["id"]

    read = await ok(dev, "GET", f"group-alias/id/{alias_id}")
    assert (read["name"], read["mount_accessor"], read["mount_type"]) == ("devs", accessor, "token")
    group = await ok(dev, "GET", f"group/id/{ext['id']}")
    assert (group["alias"]["id"], group["alias"]["name"]) == (alias_id, "devs")
    assert (await ok(dev, "LIST", "group/id"))["key_info"][ext["id"]]["alias"]["name"] == "devs"

    await refused(
        dev,
        "POST",
        "group-alias",
        {"name": "devs", "mount_accessor": accessor},
        400,
        "already in use",
    )
    await refused(
        dev,
        "POST",
        "group-alias",
        {"name": "x", "mount_accessor": accessor, "canonical_id": internal["id"]},
        400,
        "internal group",
    )
    await refused(
        dev,
        "POST",
        "group-alias",
        {"name": "x", "mount_accessor": "nope"},
        400,
        "invalid mount accessor",
    )
    await refused(
        dev, "POST", "group-alias", {"mount_accessor": accessor}, 400, "missing alias name"
    )
    await refused(
        dev,
        "POST",
        "group-alias/id/nope",
        {"name": "x", "mount_accessor": accessor},
        400,
        "invalid group alias ID",
    )

    renamed = await ok(
        dev,
        "POST",
        f"group-alias/id/{alias_id}",
        {"name": "developers", "mount_accessor": accessor},
    )
    assert renamed == {"id": alias_id, "canonical_id": ext["id"]}
    listed = await ok(dev, "LIST", "group-alias/id")
    assert listed["keys"] == [alias_id] and listed["key_info"][alias_id]["name"] == "developers"

    found = await ok(
        dev, "POST", "lookup/group", {"alias_name": "DEVELOPERS", "alias_mount_accessor": accessor}
    )
    assert found["id"] == ext["id"]
    assert (await ok(dev, "POST", "lookup/group", {"alias_id": alias_id}))["name"] == "ext"

    assert await ok(dev, "DELETE", f"group-alias/id/{alias_id}") is None
    assert (await ok(dev, "GET", f"group/id/{ext['id']}"))["alias"] == {}
    await refused(dev, "LIST", "group-alias/id", None, 404)


# -- lookup ------------------------------------------------------------------------------


async def test_lookup(dev_identity: DevServer) -> None:
    dev = dev_identity
    accessor = token_mount(dev).accessor
    entity = await ok(dev, "POST", "entity", {"name": "fred"})
    alias = await ok(
        dev,
        "POST",
        "entity-alias",
        {"name": "fr", "mount_accessor": accessor, "canonical_id": entity["id"]},
    )
    group = await ok(dev, "POST", "group", {"name": "gr"})
    for query in (
        {"id": entity["id"]},
        {"name": "FRED"},
        {"alias_id": alias["id"]},
        {"alias_name": "fr", "alias_mount_accessor": accessor},
    ):
        found = await ok(dev, "POST", "lookup/entity", query)
        assert found["id"] == entity["id"] and set(found) >= ENTITY_FIELDS
    assert (await ok(dev, "POST", "lookup/group", {"name": "gr"}))["id"] == group["id"]
    assert (await ok(dev, "POST", "lookup/group", {"id": group["id"]}))["name"] == "gr"

    assert await ok(dev, "POST", "lookup/entity", {"name": "nobody"}) is None
    assert await ok(dev, "POST", "lookup/group", {"alias_id": "nope"}) is None
    await refused(dev, "POST", "lookup/entity", {}, 400, "not supplied")
    await refused(dev, "POST", "lookup/entity", {"id": "a", "name": "b"}, 400, "conflict")
    await refused(dev, "POST", "lookup/group", {"alias_name": "x"}, 400, "needs to be set")


# -- the service behind logins -----------------------------------------------------------


async def test_policies_follow_api_changes_live(dev_identity: DevServer) -> None:
    dev = dev_identity
    identity = service(dev)
    entity = await ok(dev, "POST", "entity", {"name": "gail", "policies": ["own"]})
    group = await ok(
        dev, "POST", "group", {"name": "g", "policies": ["g1"], "member_entity_ids": [entity["id"]]}
    )
    assert (await identity.policies_for(entity["id"], "root")).identity_policies == ["g1", "own"]
    parent = await ok(
        dev,
        "POST",
        "group",
        {"name": "parent", "policies": ["p1"], "member_group_ids": [group["id"]]},
    )
    assert (await identity.policies_for(entity["id"], "root")).identity_policies == [
        "g1",
        "own",
        "p1",
    ]
    await ok(dev, "POST", f"group/id/{parent['id']}", {"policies": ["p2"]})
    assert (await identity.policies_for(entity["id"], "root")).identity_policies == [
        "g1",
        "own",
        "p2",
    ]
    await ok(dev, "POST", f"entity/id/{entity['id']}", {"disabled": True})
    assert (await identity.policies_for(entity["id"], "root")).identity_policies == []
    assert await identity.is_disabled(entity["id"], "root")


async def test_login_completion_links_the_identity(dev_identity: DevServer) -> None:
    dev = dev_identity
    mount = token_mount(dev)
    ext = await ok(
        dev, "POST", "group", {"name": "ext", "type": "external", "policies": ["from-group"]}
    )
    await ok(
        dev,
        "POST",
        "group-alias",
        {"name": "admins", "mount_accessor": mount.accessor, "canonical_id": ext["id"]},
    )
    login = Login(
        alias_name="henry", policies=["base"], token=TokenSettings(), group_aliases=["admins"]
    )
    request = Request(Operation.UPDATE, "auth/token/login", remote_addr="127.0.0.1")
    done = await dev.core.logins.complete(Response(login=login), request, mount)
    assert done.auth is not None and done.auth.entity_id
    assert done.auth.identity_policies == ["from-group"]
    assert "from-group" in done.auth.policies

    found = await ok(
        dev,
        "POST",
        "lookup/entity",
        {"alias_name": "henry", "alias_mount_accessor": mount.accessor},
    )
    assert found["id"] == done.auth.entity_id
    assert found["direct_group_ids"] == [ext["id"]]
    again = await dev.core.logins.complete(Response(login=login), request, mount)
    assert again.auth is not None and again.auth.entity_id == done.auth.entity_id


async def test_help_documents_every_path_as_valid_openapi(dev_identity: DevServer) -> None:
    resp = await dev_identity.client.get("/v1/identity/?help=1", headers=dev_identity.auth)
    assert resp.status == 200
    body = await resp.json()
    assert "identity" in body["help"]
    doc = body["openapi"]
    validate(doc)
    methods = ("get", "post", "put", "patch", "delete")
    ids = [item[m]["operationId"] for item in doc["paths"].values() for m in methods if m in item]
    assert len(ids) == len(set(ids))
    assert {"/entity", "/entity/id/{id}", "/group-alias/id/{id}", "/lookup/entity"} <= set(
        doc["paths"]
    )


# -- namespaces --------------------------------------------------------------------------


TEAM = "team-a"


async def mount_identity(dev: DevServer, namespace_id: str, namespace_path: str) -> None:
    found = dev.core.router.match(f"{namespace_path}identity/")
    if found is not None and found.mount.namespace_id == namespace_id:
        return
    entry = new_mount(
        "identity/",
        "identity",
        description="identity store",
        namespace_id=namespace_id,
        namespace_path=namespace_path,
    )
    dev.core.mounts._mount(entry)  # reserved path: mounted directly, as the core's default would


async def test_child_namespace_groups_reach_parent_groups(dev_identity: DevServer) -> None:
    dev = dev_identity
    resp = await dev.client.post("/v1/sys/namespaces/team-a", json={}, headers=dev.auth)
    assert resp.status == 200, await resp.text()
    child_id = (await resp.json())["data"]["id"]
    await mount_identity(dev, child_id, "team-a/")
    child_token = next(
        e
        for e in dev.core.router.entries()
        if e.namespace_id == child_id and e.table == "auth" and e.path == "token/"
    )

    # the child's external group, mapped from its own auth mount (SPEC rule 10)
    mapped = await ok(dev, "POST", "group", {"name": "devs", "type": "external"}, TEAM)
    await ok(
        dev,
        "POST",
        "group-alias",
        {"name": "devs", "mount_accessor": child_token.accessor, "canonical_id": mapped["id"]},
        TEAM,
    )
    await refused(
        dev,
        "POST",
        "group-alias",
        {"name": "other", "mount_accessor": token_mount(dev).accessor},
        400,
        "invalid mount accessor",
        TEAM,
    )
    platform = await ok(
        dev,
        "POST",
        "group",
        {"name": "platform", "policies": ["plat"], "member_group_ids": [mapped["id"]]},
    )
    await refused(
        dev,
        "POST",
        "group",
        {"name": "up", "member_group_ids": [platform["id"]]},
        400,
        "invalid member group ID",
        TEAM,
    )

    login = Login(alias_name="ivan", policies=[], token=TokenSettings(), group_aliases=["devs"])
    request = Request(Operation.UPDATE, "team-a/auth/token/login", remote_addr="127.0.0.1")
    done = await dev.core.logins.complete(Response(login=login), request, child_token)
    assert done.auth is not None
    assert done.auth.external_namespace_policies == {"root": ["plat"]}

    # each namespace sees only its own records
    status, _ = await call(dev, "LIST", "entity/id")
    assert status == 404
    listed = await ok(dev, "LIST", "entity/id", namespace=TEAM)
    assert listed["keys"] == [done.auth.entity_id]
    read = await ok(dev, "GET", f"entity/id/{done.auth.entity_id}", namespace=TEAM)
    assert (read["namespace_id"], read["inherited_group_ids"]) == (child_id, [platform["id"]])
