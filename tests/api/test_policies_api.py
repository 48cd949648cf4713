"""``sys/policy``, ``sys/policies/acl`` and ``sys/capabilities*`` over HTTP."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer

DENIED = {"errors": ["permission denied"]}
WEB = 'path "secret/data/web/*" {\n  capabilities = ["read", "list"]\n}\n'


def assert_error(status: int, body: dict[str, Any], expected: int, *parts: str) -> None:
    assert status == expected, body
    assert isinstance(body.get("errors"), list) and body["errors"], body
    message = " ".join(body["errors"])
    for part in parts:
        assert part in message, (part, message)


async def new_token(dev: DevServer, *policies: str) -> dict[str, Any]:
    status, body = await call(dev, "POST", "auth/token/create", {"policies": list(policies)})
    assert status == 200, body
    auth: dict[str, Any] = body["auth"]
    return auth


# --- sys/policies/acl -----------------------------------------------------------------


async def test_acl_policy_crud(dev: DevServer) -> None:
    status, body = await call(dev, "LIST", "sys/policies/acl")
    assert status == 200 and body["data"]["keys"] == ["default", "root"], body

    status, body = await call(dev, "PUT", "sys/policies/acl/Web", {"policy": WEB})
    assert status == 204, body
    status, body = await call(dev, "GET", "sys/policies/acl/web")
    assert status == 200, body
    assert body["data"]["name"] == "web"
    assert body["data"]["policy"] == WEB

    status, body = await call(dev, "LIST", "sys/policies/acl")
    assert body["data"]["keys"] == ["default", "root", "web"], body

    updated = WEB.replace('"list"', '"list", "update"')
    assert (await call(dev, "POST", "sys/policies/acl/web", {"policy": updated}))[0] == 204
    assert (await call(dev, "GET", "sys/policies/acl/web"))[1]["data"]["policy"] == updated

    status, body = await call(dev, "DELETE", "sys/policies/acl/web")
    assert status == 204, body
    status, body = await call(dev, "GET", "sys/policies/acl/web")
    assert status == 404, body
    assert (await call(dev, "LIST", "sys/policies/acl"))[1]["data"]["keys"] == ["default", "root"]
    # deleting a policy that does not exist is fine
    assert (await call(dev, "DELETE", "sys/policies/acl/web"))[0] == 204


async def test_json_policies_are_accepted(dev: DevServer) -> None:
    text = json.dumps({"path": {"secret/data/x": {"capabilities": ["read"]}}})
    status, body = await call(dev, "PUT", "sys/policies/acl/js", {"policy": text})
    assert status == 204, body
    token = (await new_token(dev, "js"))["client_token"]
    status, body = await call(
        dev, "POST", "sys/capabilities-self", {"paths": ["secret/data/x"]}, token=token
    )
    assert body["capabilities"] == ["read"], body


# --- sys/policy (legacy) -----------------------------------------------------------------


async def test_legacy_policy_endpoints(dev: DevServer) -> None:
    status, body = await call(dev, "PUT", "sys/policy/ops", {"rules": WEB})
    assert status == 204, body
    status, body = await call(dev, "GET", "sys/policy")
    assert status == 200, body
    assert body["keys"] == ["default", "ops", "root"]
    assert body["policies"] == ["default", "ops", "root"]
    assert body["data"]["policies"] == body["data"]["keys"] == ["default", "ops", "root"]

    status, body = await call(dev, "GET", "sys/policy/ops")
    assert status == 200, body
    assert body["data"] == {"name": "ops", "rules": WEB}
    assert body["rules"] == WEB and body["name"] == "ops"

    assert (await call(dev, "PUT", "sys/policy/ops", {"policy": WEB + WEB}))[0] == 204
    assert (await call(dev, "GET", "sys/policy/ops"))[1]["rules"] == WEB + WEB
    assert (await call(dev, "DELETE", "sys/policy/ops"))[0] == 204
    assert (await call(dev, "GET", "sys/policy/ops"))[0] == 404


# --- built-ins ------------------------------------------------------------------------------


async def test_default_policy_can_be_edited_not_deleted(dev: DevServer) -> None:
    status, body = await call(dev, "GET", "sys/policies/acl/default")
    assert status == 200 and 'path "auth/token/lookup-self"' in body["data"]["policy"], body
    token = (await new_token(dev, "web"))["client_token"]
    assert (await call(dev, "GET", "auth/token/lookup-self", token=token))[0] == 200

    status, body = await call(dev, "PUT", "sys/policies/acl/default", {"policy": WEB})
    assert status == 204, body
    assert (await call(dev, "GET", "sys/policies/acl/default"))[1]["data"]["policy"] == WEB
    status, body = await call(dev, "GET", "auth/token/lookup-self", token=token)
    assert (status, body) == (403, DENIED)

    for path in ("sys/policies/acl/default", "sys/policy/default"):
        status, body = await call(dev, "DELETE", path)
        assert_error(status, body, 400, "default")
    assert (await call(dev, "GET", "sys/policies/acl/default"))[0] == 200


@pytest.mark.parametrize("name", ["root", "response-wrapping"])
async def test_immutable_builtins(dev: DevServer, name: str) -> None:
    for path in (f"sys/policies/acl/{name}", f"sys/policy/{name}"):
        status, body = await call(dev, "PUT", path, {"policy": WEB})
        assert_error(status, body, 400, name)
        status, body = await call(dev, "DELETE", path)
        assert_error(status, body, 400, name)
    keys = (await call(dev, "LIST", "sys/policies/acl"))[1]["data"]["keys"]
    assert "response-wrapping" not in keys


# --- invalid input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "parts"),
    [
        ('path "secret/*" {\n  capabilities = ["read", "reed"]\n}', ["reed", "secret/*"]),
        ('path "secret/*/x" {\n  capabilities = ["read"]\n}', ["secret/*/x", "*"]),
        ('path "secret/+*" {\n  capabilities = ["read"]\n}', ["secret/+*"]),
        ('path "secret/x" {\n  capabilities = ["read"]\n  colour = "red"\n}', ["colour"]),
        ('path "secret/x" {\n  capabilities = "read"\n}', ["capabilities"]),
        ('path "secret/x" {\n  policy = "superuser"\n}', ["superuser"]),
        ('path "secret/x" {\n  capabilities = ["read"]\n  min_wrapping_ttl = "soon"\n}', []),
        (
            'path "secret/x" {\n  capabilities = ["read"]\n  max_wrapping_ttl = 10\n'
            "  min_wrapping_ttl = 20\n}",
            ["wrapping"],
        ),
        ('paths "secret/x" {\n  capabilities = ["read"]\n}', ["paths"]),
        ('path "secret/x" {\n  capabilities = ["read"\n', []),
        ('{"path": {"secret/x": {"capabilities": ["fly"]}}}', ["fly", "secret/x"]),
        ("{not json", []),
        ("   ", []),
    ],
)
async def test_invalid_policies_are_400_and_say_what_and_where(
    dev: DevServer, policy: str, parts: list[str]
) -> None:
    status, body = await call(dev, "PUT", "sys/policies/acl/broken", {"policy": policy})
    assert_error(status, body, 400, *parts)
    assert (await call(dev, "GET", "sys/policies/acl/broken"))[0] == 404


@pytest.mark.parametrize(
    "body",
    [{}, {"policy": ""}, {"policy": ["path"]}, {"policy": {"path": {}}}, {"rules": True}],
)
async def test_missing_or_mistyped_policy_text(dev: DevServer, body: dict[str, Any]) -> None:
    status, answer = await call(dev, "PUT", "sys/policies/acl/broken", body)
    assert_error(status, answer, 400)
    status, answer = await call(dev, "PUT", "sys/policy/broken", body)
    assert_error(status, answer, 400)


@pytest.mark.parametrize("name", ["x//y", "a/"])
async def test_bad_policy_names(dev: DevServer, name: str) -> None:
    status, body = await call(dev, "PUT", f"sys/policies/acl/{name}", {"policy": WEB})
    assert 400 <= status < 500, body
    assert body.get("errors"), body


async def test_policy_endpoints_need_permission(dev: DevServer) -> None:
    await call(dev, "PUT", "sys/policies/acl/web", {"policy": WEB})
    token = (await new_token(dev, "web"))["client_token"]
    for method, path, body in [
        ("LIST", "sys/policies/acl", None),
        ("GET", "sys/policies/acl/web", None),
        ("PUT", "sys/policies/acl/web", {"policy": WEB + WEB}),
        ("PUT", "sys/policies/acl/new", {"policy": WEB}),
        ("DELETE", "sys/policies/acl/web", None),
        ("GET", "sys/policy", None),
        ("GET", "sys/policy/web", None),
        ("PUT", "sys/policy/web", {"policy": WEB}),
        ("DELETE", "sys/policy/web", None),
        ("POST", "sys/capabilities", {"token": token, "paths": ["x"]}),
        ("POST", "sys/capabilities-accessor", {"accessor": "x", "paths": ["x"]}),
    ]:
        status, answer = await call(dev, method, path, body, token=token)
        assert (status, answer) == (403, DENIED), (method, path)
    assert (await call(dev, "GET", "sys/policies/acl/web"))[1]["data"]["policy"] == WEB
    assert (await call(dev, "GET", "sys/policies/acl/new"))[0] == 404

    # read-only access to policies lets a token read but not write
    reader = 'path "sys/policies/acl/*" {\n  capabilities = ["read", "list"]\n}\n'
    await call(dev, "PUT", "sys/policies/acl/policy-reader", {"policy": reader})
    token = (await new_token(dev, "policy-reader"))["client_token"]
    assert (await call(dev, "GET", "sys/policies/acl/web", token=token))[0] == 200
    status, answer = await call(
        dev, "PUT", "sys/policies/acl/web", {"policy": WEB + WEB}, token=token
    )
    assert (status, answer) == (403, DENIED)


# --- capabilities ---------------------------------------------------------------------------


CAPS = (
    'path "secret/data/*" {\n  capabilities = ["update", "read", "create"]\n}\n'
    'path "secret/data/blocked" {\n  capabilities = ["deny"]\n}\n'
    'path "sys/mounts/*" {\n  capabilities = ["update", "sudo"]\n}\n'
)


async def test_capabilities_by_token_self_and_accessor(dev: DevServer) -> None:
    await call(dev, "PUT", "sys/policies/acl/caps", {"policy": CAPS})
    auth = await new_token(dev, "caps")
    paths = ["secret/data/a", "secret/data/blocked", "/sys/mounts/kv", "nothing/here"]
    expected = {
        "secret/data/a": ["create", "read", "update"],
        "secret/data/blocked": ["deny"],
        "sys/mounts/kv": ["sudo", "update"],
        "nothing/here": ["deny"],
    }
    status, body = await call(
        dev, "POST", "sys/capabilities", {"token": auth["client_token"], "paths": paths}
    )
    assert status == 200, body
    assert body["data"] == expected
    assert "capabilities" not in body["data"]
    status, body = await call(
        dev, "POST", "sys/capabilities-self", {"paths": paths}, token=auth["client_token"]
    )
    assert status == 200 and body["data"] == expected, body
    status, body = await call(
        dev, "POST", "sys/capabilities-accessor", {"accessor": auth["accessor"], "paths": paths}
    )
    assert status == 200 and body["data"] == expected, body

    # a single path also gets "capabilities", at the top level too
    status, body = await call(
        dev,
        "POST",
        "sys/capabilities-accessor",
        {"accessor": auth["accessor"], "paths": ["secret/data/a"]},
    )
    assert status == 200, body
    assert body["data"]["capabilities"] == ["create", "read", "update"]
    assert body["data"]["secret/data/a"] == ["create", "read", "update"]
    assert body["capabilities"] == ["create", "read", "update"]
    status, body = await call(dev, "POST", "sys/capabilities-self", {"paths": "a/b"})
    assert body["capabilities"] == ["root"] and body["a/b"] == ["root"], body
    # the deprecated single "path" field
    status, body = await call(
        dev, "POST", "sys/capabilities", {"token": auth["client_token"], "path": "secret/data/q"}
    )
    assert status == 200 and body["capabilities"] == ["create", "read", "update"], body


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("sys/capabilities", {"paths": ["a"]}),
        ("sys/capabilities", {"token": "hvs.nosuchtoken00000000000000", "paths": ["a"]}),
        ("sys/capabilities", {"token": "<token>"}),
        ("sys/capabilities", {"token": "<token>", "paths": [1, 2]}),
        ("sys/capabilities", {"token": ["x"], "paths": ["a"]}),
        ("sys/capabilities-self", {}),
        ("sys/capabilities-self", {"paths": {"a": 1}}),
        ("sys/capabilities-accessor", {"paths": ["a"]}),
        ("sys/capabilities-accessor", {"accessor": "unknown", "paths": ["a"]}),
        ("sys/capabilities-accessor", {"accessor": "<accessor>"}),
    ],
)
async def test_capabilities_bad_input(dev: DevServer, path: str, body: dict[str, Any]) -> None:
    auth = await new_token(dev, "web")
    body = {
        key: auth["client_token"]
        if value == "<token>"
        else auth["accessor"]
        if value == "<accessor>"
        else value
        for key, value in body.items()
    }
    status, answer = await call(dev, "POST", path, body)
    assert_error(status, answer, 400)


async def test_capabilities_self_is_in_the_default_policy(dev: DevServer) -> None:
    token = (await new_token(dev, "web"))["client_token"]
    status, body = await call(
        dev,
        "POST",
        "sys/capabilities-self",
        {"paths": ["cubbyhole/x", "secret/data/x"]},
        token=token,
    )
    assert status == 200, body
    assert body["data"]["cubbyhole/x"] == ["create", "delete", "list", "read", "update"]
    assert body["data"]["secret/data/x"] == ["deny"]
