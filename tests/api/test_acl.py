"""ACL enforcement through the HTTP pipeline: existence checks, globs, deny,
sudo paths, parameter constraints, wrapping TTL bounds and list capability.

Denials are 403 with ``{"errors": ["permission denied"]}``, as the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.api.helpers import ROOT, token_with
from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer

DENIED = {"errors": ["permission denied"]}


def rule(path: str, *caps: str, extra: str = "") -> str:
    quoted = ", ".join(f'"{c}"' for c in caps)
    return f'path "{path}" {{\n  capabilities = [{quoted}]\n  {extra}\n}}\n'


async def kv_put(dev: DevServer, path: str, data: dict[str, Any], token: str = ROOT) -> int:
    status, _ = await call(dev, "POST", f"secret/data/{path}", {"data": data}, token=token)
    return status


async def test_missing_and_unknown_tokens_are_denied(dev: DevServer) -> None:
    await kv_put(dev, "app", {"k": "v"})
    for token in (None, "hvs.unknown0000000000000000", ""):
        status, body = await call(dev, "GET", "secret/data/app", token=token)
        assert (status, body) == (403, DENIED), token
    status, body = await call(
        dev, "GET", "secret/data/app", token=None, headers={"Authorization": "Basic abc"}
    )
    assert (status, body) == (403, DENIED)


async def test_create_only_policy_cannot_update(dev: DevServer) -> None:
    token = await token_with(dev, creator=rule("secret/data/*", "create"))
    assert await kv_put(dev, "fresh", {"v": 1}, token) == 200
    # the secret exists now: the same write is an update
    assert await kv_put(dev, "fresh", {"v": 2}, token) == 403
    status, body = await call(dev, "GET", "secret/data/fresh", token=token)
    assert (status, body) == (403, DENIED)
    status, body = await call(dev, "GET", "secret/data/fresh")
    assert body["data"]["data"] == {"v": 1}
    assert body["data"]["metadata"]["version"] == 1


async def test_update_only_policy_cannot_create(dev: DevServer) -> None:
    await kv_put(dev, "existing", {"v": 1})
    token = await token_with(dev, updater=rule("secret/data/*", "update"))
    assert await kv_put(dev, "existing", {"v": 2}, token) == 200
    assert await kv_put(dev, "brand-new", {"v": 1}, token) == 403
    status, _ = await call(dev, "GET", "secret/data/brand-new")
    assert status == 404


async def test_read_only_policy(dev: DevServer) -> None:
    await kv_put(dev, "app", {"k": "v"})
    token = await token_with(dev, reader=rule("secret/data/app", "read"))
    status, body = await call(dev, "GET", "secret/data/app", token=token)
    assert status == 200 and body["data"]["data"] == {"k": "v"}, body
    for path in ("app", "other"):
        status, body = await call(
            dev, "POST", f"secret/data/{path}", {"data": {"x": 1}}, token=token
        )
        assert (status, body) == (403, DENIED)
    status, body = await call(dev, "DELETE", "secret/data/app", token=token)
    assert (status, body) == (403, DENIED)
    status, body = await call(dev, "GET", "secret/data/app-other", token=token)
    assert (status, body) == (403, DENIED)


async def test_deny_in_another_policy_wins_for_the_same_pattern(dev: DevServer) -> None:
    await kv_put(dev, "app", {"k": "v"})
    token = await token_with(
        dev,
        writer=rule("secret/data/*", "create", "read", "update"),
        blocker=rule("secret/data/*", "deny"),
    )
    status, body = await call(dev, "GET", "secret/data/app", token=token)
    assert (status, body) == (403, DENIED)
    assert await kv_put(dev, "new", {"x": 1}, token) == 403


async def test_exact_deny_beats_a_broader_grant(dev: DevServer) -> None:
    await kv_put(dev, "app", {"k": "v"})
    await kv_put(dev, "locked", {"k": "v"})
    token = await token_with(
        dev,
        broad=rule("secret/data/*", "read"),
        narrow=rule("secret/data/locked", "deny"),
    )
    assert (await call(dev, "GET", "secret/data/app", token=token))[0] == 200
    status, body = await call(dev, "GET", "secret/data/locked", token=token)
    assert (status, body) == (403, DENIED)
    status, body = await call(
        dev, "POST", "sys/capabilities-self", {"paths": ["secret/data/locked"]}, token=token
    )
    assert status == 200 and body["capabilities"] == ["deny"], body


@pytest.mark.parametrize(
    ("pattern", "allowed", "denied"),
    [
        ("secret/data/+/config", ["a/config", "bb/config"], ["a/b/config", "config", "a/configs"]),
        ("secret/data/team-*", ["team-a", "team-b/x/y", "team-"], ["team", "teamx", "other"]),
        ("secret/data/+/db-*", ["a/db-1", "b/db-/x"], ["db-1", "a/b/db-1", "a/cache"]),
    ],
)
async def test_glob_patterns(
    dev: DevServer, pattern: str, allowed: list[str], denied: list[str]
) -> None:
    for path in allowed + denied:
        assert await kv_put(dev, path, {"p": path}) == 200
    token = await token_with(dev, globs=rule(pattern, "read"))
    for path in allowed:
        status, body = await call(dev, "GET", f"secret/data/{path}", token=token)
        assert status == 200 and body["data"]["data"] == {"p": path}, (path, body)
    for path in denied:
        status, body = await call(dev, "GET", f"secret/data/{path}", token=token)
        assert (status, body) == (403, DENIED), path


@pytest.mark.parametrize(
    ("method", "path", "body", "policy_path", "caps"),
    [
        ("POST", "sys/remount", {"from": "kv1", "to": "kv1-moved"}, "sys/remount", ["update"]),
        ("POST", "sys/auth/userpass", {"type": "userpass"}, "sys/auth/*", ["create", "update"]),
        ("POST", "sys/auth/token/tune", {"description": "x"}, "sys/auth/*", ["update"]),
        (
            "POST",
            "auth/token/revoke-orphan",
            {"token": "<victim>"},
            "auth/token/revoke-orphan",
            ["update"],
        ),
        ("LIST", "auth/token/accessors", None, "auth/token/accessors", ["list"]),
        ("POST", "sys/rotate", {}, "sys/rotate", ["update"]),
        ("POST", "sys/seal", {}, "sys/seal", ["update"]),
    ],
)
async def test_sudo_paths_need_sudo(
    dev: DevServer,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    policy_path: str,
    caps: list[str],
) -> None:
    status, answer = await call(dev, "POST", "sys/mounts/kv1", {"type": "kv"})
    assert status == 204, answer
    status, answer = await call(dev, "POST", "auth/token/create", {"policies": ["web"]})
    victim = answer["auth"]["client_token"]
    if body and body.get("token") == "<victim>":
        body = {"token": victim}
    term_before = dev.core.barrier.key_status()[0]

    plain = await token_with(dev, plain=rule(policy_path, *caps))
    status, answer = await call(dev, method, path, body, token=plain)
    assert (status, answer) == (403, DENIED)
    assert not dev.core.sealed
    assert dev.core.barrier.key_status()[0] == term_before

    sudo = await token_with(dev, withsudo=rule(policy_path, *caps, "sudo"))
    status, answer = await call(dev, method, path, body, token=sudo)
    assert status != 403, answer
    assert status < 500, answer
    if path == "sys/seal":
        assert status == 204 and dev.core.sealed
    if path == "sys/rotate":
        assert status == 204 and dev.core.barrier.key_status()[0] == term_before + 1
    if path == "sys/remount":
        assert status == 200, answer
    if path == "auth/token/revoke-orphan":
        assert status == 204 and await dev.core.tokens.lookup(victim) is None


async def test_help_is_allowed_even_on_sudo_paths(dev: DevServer) -> None:
    token = await token_with(dev, nothing=rule("secret/data/none", "read"))
    resp = await dev.client.get(
        "/v1/sys/rotate", params={"help": "1"}, headers={"X-Service-Token": token}
    )
    assert resp.status == 200
    assert "help" in await resp.json()
    resp = await dev.client.get("/v1/sys/rotate", params={"help": "1"})
    assert resp.status == 403


async def mount_kv1(dev: DevServer) -> None:
    status, body = await call(dev, "POST", "sys/mounts/kv1", {"type": "kv"})
    assert status == 204, body


async def test_allowed_parameters(dev: DevServer) -> None:
    await mount_kv1(dev)
    token = await token_with(
        dev,
        params=rule(
            "kv1/*",
            "create",
            "update",
            extra='allowed_parameters = { "color" = ["red", "blue*"], "size" = [] }',
        ),
    )
    ok = [{"color": "red"}, {"color": "blue-ish", "size": 99}, {"size": "anything"}]
    for index, body in enumerate(ok):
        status, answer = await call(dev, "POST", f"kv1/ok{index}", body, token=token)
        assert status == 204, (body, answer)
    bad = [{"color": "green"}, {"shape": "round"}, {"color": "red", "extra": 1}, {"color": 5}]
    for index, body in enumerate(bad):
        status, answer = await call(dev, "POST", f"kv1/bad{index}", body, token=token)
        assert (status, answer) == (403, DENIED), body
        assert (await call(dev, "GET", f"kv1/bad{index}"))[0] == 404


async def test_denied_parameters(dev: DevServer) -> None:
    await mount_kv1(dev)
    token = await token_with(
        dev,
        params=rule(
            "kv1/*",
            "create",
            "update",
            extra='denied_parameters = { "secret" = [], "env" = ["prod"] }',
        ),
    )
    good: list[dict[str, Any]] = [{"env": "dev"}, {"other": 1}]
    for body in good:
        status, answer = await call(dev, "POST", "kv1/ok", body, token=token)
        assert status == 204, (body, answer)
    bad: list[dict[str, Any]] = [
        {"secret": "x"},
        {"env": "prod"},
        {"ENV": "prod"},
        {"env": ["dev", "prod"]},
    ]
    for body in bad:
        status, answer = await call(dev, "POST", "kv1/bad", body, token=token)
        assert (status, answer) == (403, DENIED), body


async def test_denied_star_denies_any_body(dev: DevServer) -> None:
    await mount_kv1(dev)
    token = await token_with(
        dev, params=rule("kv1/*", "create", "update", extra='denied_parameters = { "*" = [] }')
    )
    status, answer = await call(dev, "POST", "kv1/x", {"a": 1}, token=token)
    assert (status, answer) == (403, DENIED)


async def test_required_parameters(dev: DevServer) -> None:
    await mount_kv1(dev)
    token = await token_with(
        dev,
        params=rule("kv1/*", "create", "update", extra='required_parameters = ["owner", "team"]'),
    )
    status, answer = await call(dev, "POST", "kv1/x", {"owner": "me"}, token=token)
    assert (status, answer) == (403, DENIED)
    status, answer = await call(dev, "POST", "kv1/x", {"owner": "me", "team": "a"}, token=token)
    assert status == 204, answer


async def test_wrapping_ttl_bounds(dev: DevServer) -> None:
    await kv_put(dev, "app", {"k": "v"})
    token = await token_with(
        dev,
        wrapped=rule(
            "secret/data/*", "read", extra='min_wrapping_ttl = 60\n  max_wrapping_ttl = "5m"'
        ),
    )
    status, body = await call(dev, "GET", "secret/data/app", token=token)
    assert (status, body) == (403, DENIED)
    for ttl in ("30s", "10m", "301"):
        status, body = await call(
            dev, "GET", "secret/data/app", token=token, headers={"X-Service-Wrap-TTL": ttl}
        )
        assert (status, body) == (403, DENIED), ttl
    for ttl in ("60", "2m", "300"):
        status, body = await call(
            dev, "GET", "secret/data/app", token=token, headers={"X-Service-Wrap-TTL": ttl}
        )
        assert status == 200, (ttl, body)
        assert body["data"] is None and body["wrap_info"]["token"], body


async def test_list_capability_on_metadata(dev: DevServer) -> None:
    await kv_put(dev, "team/a", {"k": "v"})
    await kv_put(dev, "team/b", {"k": "v"})
    lister = await token_with(dev, lister=rule("secret/metadata/*", "list"))
    reader = await token_with(dev, reader=rule("secret/metadata/*", "read"))
    status, body = await call(dev, "LIST", "secret/metadata/team", token=lister)
    assert status == 200 and body["data"]["keys"] == ["a", "b"], body
    status, body = await call(dev, "GET", "secret/metadata/team?list=true", token=lister)
    assert status == 200 and body["data"]["keys"] == ["a", "b"], body
    status, body = await call(dev, "GET", "secret/metadata/team/a", token=lister)
    assert (status, body) == (403, DENIED)
    status, body = await call(dev, "LIST", "secret/metadata/team", token=reader)
    assert (status, body) == (403, DENIED)
    # a list rule without the trailing slash also covers the listing
    exact = await token_with(dev, exact=rule("secret/metadata/team", "list"))
    status, body = await call(dev, "LIST", "secret/metadata/team/", token=exact)
    assert status == 200 and body["data"]["keys"] == ["a", "b"], body


async def test_policy_changes_apply_to_existing_tokens(dev: DevServer) -> None:
    await kv_put(dev, "app", {"k": "v"})
    token = await token_with(dev, changing=rule("secret/data/app", "read"))
    assert (await call(dev, "GET", "secret/data/app", token=token))[0] == 200
    status, _ = await call(
        dev, "PUT", "sys/policies/acl/changing", {"policy": rule("secret/data/other", "read")}
    )
    assert status == 204
    assert (await call(dev, "GET", "secret/data/app", token=token))[0] == 403
    await call(dev, "DELETE", "sys/policies/acl/changing")
    assert (await call(dev, "GET", "secret/data/other", token=token))[0] == 403


async def test_default_policy_grants_cubbyhole_but_not_secrets(dev: DevServer) -> None:
    await kv_put(dev, "app", {"k": "v"})
    status, body = await call(dev, "POST", "auth/token/create", {"policies": ["default"]})
    token = body["auth"]["client_token"]
    assert (await call(dev, "POST", "cubbyhole/mine", {"a": 1}, token=token))[0] == 204
    status, body = await call(dev, "GET", "secret/data/app", token=token)
    assert (status, body) == (403, DENIED)
    status, body = await call(dev, "GET", "sys/mounts", token=token)
    assert (status, body) == (403, DENIED)
