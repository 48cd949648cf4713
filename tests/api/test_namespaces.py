"""Namespaces through the HTTP API: resolution, isolation and reach of policies."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import DevServer


async def call(
    dev: DevServer,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    namespace: str | None = None,
    token: str | None = None,
) -> tuple[int, Any]:
    headers = {"X-Service-Token": token or dev.token}
    if namespace is not None:
        headers["X-Service-Namespace"] = namespace
    resp = await dev.client.request(method, f"/v1/{path}", json=body, headers=headers)
    text = await resp.text()
    return resp.status, (json.loads(text) if text else None)


async def make(dev: DevServer, path: str) -> dict[str, Any]:
    *parents, name = path.strip("/").split("/")
    prefix = "".join(p + "/" for p in parents)
    status, body = await call(dev, "POST", f"{prefix}sys/namespaces/{name}")
    assert status == 200, body
    return dict(body["data"])


async def token_in(dev: DevServer, namespace: str, policy: str | None = None) -> str:
    policies = []
    if policy is not None:
        status, _ = await call(
            dev, "PUT", "sys/policies/acl/p", {"policy": policy}, namespace=namespace
        )
        assert status == 204
        policies = ["p"]
    status, body = await call(
        dev, "POST", "auth/token/create", {"policies": policies}, namespace=namespace
    )
    assert status == 200, body
    return str(body["auth"]["client_token"])


async def test_create_read_list_and_nested_creation(dev: DevServer) -> None:
    ns1 = await make(dev, "ns1")
    assert ns1["path"] == "ns1/" and len(ns1["id"]) == 5
    ns2 = await make(dev, "ns1/ns2")
    assert ns2["path"] == "ns1/ns2/"
    status, body = await call(dev, "LIST", "sys/namespaces")
    assert status == 200 and body["data"]["keys"] == ["ns1/"]
    status, body = await call(dev, "LIST", "sys/namespaces", namespace="ns1")
    assert body["data"]["keys"] == ["ns2/"]
    assert body["data"]["key_info"]["ns2/"]["id"] == ns2["id"]
    status, body = await call(dev, "GET", "ns1/sys/namespaces/ns2")
    assert status == 200 and body["data"]["id"] == ns2["id"]
    status, body = await call(dev, "GET", "sys/namespaces/ns2", namespace="ns1/")
    assert body["data"]["id"] == ns2["id"]


async def test_names_are_validated(dev: DevServer) -> None:
    for bad in (
        "root",
        "sys",
        "auth",
        "identity",
        "cubbyhole",
        "audit",
        "a%20b",
        "bad*name",
        "a.b%2Fc",
    ):
        status, body = await call(dev, "POST", f"sys/namespaces/{bad}")
        assert status == 400, (bad, body)
        assert body["errors"]
    await make(dev, "dup")
    status, body = await call(dev, "POST", "sys/namespaces/dup")
    assert status == 400 and "already exists" in body["errors"][0]


async def test_header_and_path_prefix_are_the_same_request(dev: DevServer) -> None:
    await make(dev, "ns1")
    await make(dev, "ns1/ns2")
    status, _ = await call(dev, "POST", "sys/mounts/kv", {"type": "kv-v2"}, namespace="ns1/ns2")
    assert status == 204
    status, _ = await call(dev, "PUT", "ns2/kv/data/x", {"data": {"v": 1}}, namespace="ns1/")
    assert status == 200
    forms = [
        ("ns1/ns2/kv/data/x", None),
        ("kv/data/x", "ns1/ns2"),
        ("ns2/kv/data/x", "ns1"),
        ("ns1/ns2/kv/data/x", "root"),
        ("ns1/ns2/kv/data/x", ""),
    ]
    for path, namespace in forms:
        status, body = await call(dev, "GET", path, namespace=namespace)
        assert status == 200, (path, namespace, body)
        assert body["data"]["data"] == {"v": 1}


async def test_unknown_namespace_is_404(dev: DevServer) -> None:
    status, body = await call(dev, "GET", "sys/mounts", namespace="nope")
    assert status == 404 and body["errors"]
    status, body = await call(dev, "GET", "nope/sys/mounts")
    assert status == 404 and body["errors"]


async def test_each_namespace_has_its_own_mounts_and_policies(dev: DevServer) -> None:
    await make(dev, "a")
    await make(dev, "b")
    status, body = await call(dev, "GET", "sys/mounts", namespace="a")
    assert {"sys/", "cubbyhole/"} <= set(body["data"]) and "secret/" not in body["data"]
    status, body = await call(dev, "GET", "sys/auth", namespace="a")
    assert "token/" in body["data"]
    await call(dev, "POST", "sys/mounts/kv", {"type": "kv"}, namespace="a")
    status, body = await call(dev, "GET", "sys/mounts", namespace="b")
    assert "kv/" not in body["data"]
    await call(
        dev,
        "PUT",
        "sys/policies/acl/only-a",
        {"policy": 'path "kv/*" {capabilities=["read"]}'},
        namespace="a",
    )
    status, body = await call(dev, "LIST", "sys/policies/acl", namespace="b")
    assert "only-a" not in body["data"]["keys"] and "default" in body["data"]["keys"]
    status, body = await call(dev, "LIST", "sys/policies/acl")
    assert status == 200 and "only-a" not in body["data"]["keys"]


async def test_tokens_act_in_their_namespace_and_below_only(dev: DevServer) -> None:
    await make(dev, "a")
    await make(dev, "a/child")
    await make(dev, "b")
    for ns in ("a", "a/child", "b"):
        await call(dev, "POST", "sys/mounts/kv", {"type": "kv"}, namespace=ns)
        await call(dev, "PUT", "kv/x", {"v": ns}, namespace=ns)
    token = await token_in(
        dev, "a", 'path "kv/*" {capabilities=["read"]}\npath "child/kv/*" {capabilities=["read"]}'
    )
    status, body = await call(dev, "GET", "kv/x", namespace="a", token=token)
    assert status == 200 and body["data"] == {"v": "a"}
    # parent-to-child reach via the child's relative path prefix
    status, body = await call(dev, "GET", "kv/x", namespace="a/child", token=token)
    assert status == 200 and body["data"] == {"v": "a/child"}
    # never a sibling or an ancestor
    status, body = await call(dev, "GET", "kv/x", namespace="b", token=token)
    assert status == 403 and body["errors"] == ["permission denied"]
    status, _ = await call(dev, "GET", "secret/data/x", token=token)
    assert status == 403
    status, body = await call(dev, "GET", "auth/token/lookup-self", namespace="a", token=token)
    assert status == 200 and body["data"]["namespace_path"] == "a/"


async def test_root_policy_reaches_child_by_prefix(dev: DevServer) -> None:
    await make(dev, "team")
    await call(dev, "POST", "sys/mounts/kv", {"type": "kv"}, namespace="team")
    await call(dev, "PUT", "kv/db", {"password": "x"}, namespace="team")
    root_child_reader = await token_in(dev, "", 'path "team/kv/*" {capabilities=["read"]}')
    status, body = await call(dev, "GET", "kv/db", namespace="team", token=root_child_reader)
    assert status == 200 and body["data"] == {"password": "x"}
    status, _ = await call(
        dev, "PUT", "kv/db", {"password": "y"}, namespace="team", token=root_child_reader
    )
    assert status == 403
    plain = await token_in(dev, "", 'path "kv/*" {capabilities=["read"]}')
    status, _ = await call(dev, "GET", "kv/db", namespace="team", token=plain)
    assert status == 403


async def test_root_only_operations_are_refused_in_namespaces(dev: DevServer) -> None:
    await make(dev, "t")
    for method, path in (
        ("PUT", "sys/seal"),
        ("PUT", "sys/rotate"),
        ("GET", "sys/key-status"),
        ("GET", "sys/metrics"),
    ):
        status, body = await call(dev, method, path, namespace="t")
        assert status == 400, (path, body)
        assert body["errors"] == ["operation unavailable in namespaces"]


async def test_delete_refuses_children_then_removes_everything(dev: DevServer) -> None:
    await make(dev, "gone")
    await make(dev, "gone/kid")
    status, body = await call(dev, "DELETE", "sys/namespaces/gone")
    assert status == 409 and body["errors"]
    await call(dev, "POST", "sys/mounts/kv", {"type": "kv"}, namespace="gone")
    await call(dev, "PUT", "kv/x", {"marker": "namespace-payload"}, namespace="gone")
    token = await token_in(dev, "gone")
    status, _ = await call(dev, "DELETE", "sys/namespaces/kid", namespace="gone")
    assert status == 204
    ns_id = dev.core.namespaces.by_path("gone").id  # type: ignore[union-attr]
    status, _ = await call(dev, "DELETE", "sys/namespaces/gone")
    assert status == 204
    status, _ = await call(dev, "GET", "sys/mounts", namespace="gone")
    assert status == 404
    assert await dev.core.tokens.lookup(token) is None
    leftovers = await dev.core.barrier.list(f"namespaces/{ns_id}/")
    assert leftovers == []
    # the name can be used again, empty
    await make(dev, "gone")
    status, body = await call(dev, "GET", "sys/mounts", namespace="gone")
    assert "kv/" not in body["data"]


async def test_mounts_and_namespaces_cannot_shadow_each_other(dev: DevServer) -> None:
    await make(dev, "shared")
    status, body = await call(dev, "POST", "sys/mounts/shared", {"type": "kv"})
    assert status == 400 and "already in use" in body["errors"][0]
    status, _ = await call(dev, "POST", "sys/mounts/taken", {"type": "kv"})
    assert status == 204
    status, body = await call(dev, "POST", "sys/namespaces/taken")
    assert status == 400 and body["errors"]


async def test_custom_metadata_patch(dev: DevServer) -> None:
    status, body = await call(
        dev, "POST", "sys/namespaces/meta", {"custom_metadata": {"team": "x"}}
    )
    assert body["data"]["custom_metadata"] == {"team": "x"}
    resp = await dev.client.patch(
        "/v1/sys/namespaces/meta",
        json={"custom_metadata": {"team": None, "owner": "y"}},
        headers={**dev.auth, "Content-Type": "application/merge-patch+json"},
    )
    assert resp.status == 200
    assert (await resp.json())["data"]["custom_metadata"] == {"owner": "y"}
    status, body = await call(dev, "POST", "sys/namespaces/badmeta", {"custom_metadata": {"n": 1}})
    assert status == 400
