"""``sys/mounts``, ``sys/mounts/:path/tune``, ``sys/remount`` and ``sys/auth`` over HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.api import helpers
from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer

DENIED = {"errors": ["permission denied"]}
ENTRY_FIELDS = {"type", "description", "accessor", "config", "options", "local", "seal_wrap"}


def assert_error(status: int, body: dict[str, Any], expected: int, contains: str = "") -> None:
    assert status == expected, body
    assert isinstance(body.get("errors"), list) and body["errors"], body
    if contains:
        assert any(contains in message for message in body["errors"]), body


async def enable(dev: DevServer, path: str, **body: Any) -> None:
    status, answer = await call(dev, "POST", f"sys/mounts/{path}", body)
    assert status == 204, answer


async def token_with(dev: DevServer, policy: str) -> str:
    return await helpers.token_with(dev, p=policy)


async def mount_keys(dev: DevServer, uuid: str) -> list[str]:
    return await dev.core.barrier.list(f"logical/{uuid}/")


# --- listing and reading ----------------------------------------------------------------


async def test_default_mounts_listing_shape(dev: DevServer) -> None:
    status, body = await call(dev, "GET", "sys/mounts")
    assert status == 200, body
    mounts = body["data"]
    assert {"sys/", "cubbyhole/", "secret/"} <= set(mounts)
    for path, entry in mounts.items():
        assert path.endswith("/")
        assert set(entry) >= ENTRY_FIELDS, (path, entry)
        assert set(entry["config"]) >= {"default_lease_ttl", "max_lease_ttl", "force_no_cache"}
        assert isinstance(entry["accessor"], str) and entry["accessor"]
        assert body[path] == entry  # also at the top level
    assert mounts["secret/"]["type"] == "kv"
    assert mounts["secret/"]["options"] == {"version": "2"}
    assert mounts["cubbyhole/"]["type"] == "cubbyhole"
    assert mounts["cubbyhole/"]["local"] is True
    assert mounts["sys/"]["type"] == "system"
    accessors = [entry["accessor"] for entry in mounts.values()]
    assert len(set(accessors)) == len(accessors)


@pytest.mark.parametrize(
    ("body", "version"),
    [
        ({"type": "kv"}, "1"),
        ({"type": "kv-v2"}, "2"),
        ({"type": "kv", "options": {"version": "2"}}, "2"),
        ({"type": "kv", "options": {"version": 2}}, "2"),
        ({"plugin_name": "kv"}, "1"),
    ],
)
async def test_enable_kv_versions(dev: DevServer, body: dict[str, Any], version: str) -> None:
    await enable(dev, "store", description="team store", **body)
    status, listing = await call(dev, "GET", "sys/mounts")
    entry = listing["data"]["store/"]
    assert entry["description"] == "team store"
    assert entry["type"] == body.get("type", "kv")
    status, read = await call(dev, "GET", "sys/mounts/store")
    assert status == 200, read
    assert read["data"]["accessor"] == entry["accessor"]
    assert read["data"]["type"] == entry["type"]
    if version == "2":
        status, answer = await call(dev, "POST", "store/data/x", {"data": {"a": 1}})
        assert status == 200 and answer["data"]["version"] == 1, answer
        status, answer = await call(dev, "GET", "store/data/x")
        assert answer["data"]["data"] == {"a": 1}
    else:
        status, answer = await call(dev, "POST", "store/x", {"a": 1})
        assert status == 204, answer
        status, answer = await call(dev, "GET", "store/x")
        assert answer["data"] == {"a": 1}


async def test_enable_with_config_and_flags(dev: DevServer) -> None:
    await enable(
        dev,
        "conf",
        type="kv",
        config={"default_lease_ttl": "1h", "max_lease_ttl": 7200, "force_no_cache": True},
        local=True,
        seal_wrap=True,
    )
    entry = (await call(dev, "GET", "sys/mounts"))[1]["data"]["conf/"]
    assert entry["config"] == {
        "default_lease_ttl": 3600,
        "max_lease_ttl": 7200,
        "force_no_cache": True,
    }
    assert (entry["local"], entry["seal_wrap"]) == (True, True)


async def test_read_of_a_missing_mount_is_400(dev: DevServer) -> None:
    status, body = await call(dev, "GET", "sys/mounts/nothere")
    assert_error(status, body, 400, "nothere")


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "contains"),
    [
        ("x1", {}, "type"),
        ("x1", {"description": "no type"}, "type"),
        ("x1", {"type": "nosuchengine"}, "nosuchengine"),
        ("x1", {"type": ["kv"]}, ""),
        ("x1", {"type": "system"}, ""),
        ("x1", {"type": "cubbyhole"}, ""),
        ("x1", {"type": "token"}, ""),
        ("x1", {"type": "kv", "options": {"version": "3"}}, "version"),
        ("x1", {"type": "kv", "options": "v2"}, ""),
        ("x1", {"type": "kv", "config": "fast"}, ""),
        ("x1", {"type": "kv", "config": {"default_lease_ttl": "forever"}}, "default_lease_ttl"),
        ("x1", {"type": "kv", "config": {"max_lease_ttl": -1}}, "max_lease_ttl"),
        ("x1", {"type": "kv", "config": {"turbo": True}}, "turbo"),
        ("x1", {"type": "kv", "config": {"force_no_cache": "maybe"}}, "force_no_cache"),
        ("x1", {"type": "kv", "config": {"default_lease_ttl": "2h", "max_lease_ttl": "1h"}}, ""),
        ("x1", {"type": "kv", "local": "sometimes"}, ""),
        ("sys", {"type": "kv"}, ""),
        ("sys/sub", {"type": "kv"}, ""),
        ("auth/mine", {"type": "kv"}, "reserved"),
        ("cubbyhole", {"type": "kv"}, ""),
        ("cubbyhole/more", {"type": "kv"}, ""),
        ("identity", {"type": "kv"}, "reserved"),
        ("secret", {"type": "kv"}, "in use"),
        ("secret/nested", {"type": "kv"}, "in use"),
    ],
)
async def test_enable_rejects_bad_input(
    dev: DevServer, path: str, body: dict[str, Any], contains: str
) -> None:
    before = (await call(dev, "GET", "sys/mounts"))[1]["data"]
    status, answer = await call(dev, "POST", f"sys/mounts/{path}", body)
    assert_error(status, answer, 400, contains)
    assert (await call(dev, "GET", "sys/mounts"))[1]["data"] == before


async def test_overlapping_mounts_are_refused(dev: DevServer) -> None:
    await enable(dev, "team/a", type="kv")
    for path in ("team/a/b", "team", "team/a"):
        status, body = await call(dev, "POST", f"sys/mounts/{path}", {"type": "kv"})
        assert_error(status, body, 400, "in use")
    await enable(dev, "team/b", type="kv")
    await enable(dev, "tea", type="kv")


# --- tune ---------------------------------------------------------------------------------


async def test_tune_read_and_write(dev: DevServer) -> None:
    await enable(dev, "kv1", type="kv", description="before")
    status, body = await call(dev, "GET", "sys/mounts/kv1/tune")
    assert status == 200, body
    assert body["data"]["description"] == "before"
    system_max = dev.core.settings.max_lease_ttl
    assert body["data"]["default_lease_ttl"] == dev.core.settings.default_lease_ttl
    assert body["data"]["max_lease_ttl"] == system_max
    assert body["data"]["force_no_cache"] is False

    status, body = await call(
        dev,
        "POST",
        "sys/mounts/kv1/tune",
        {"default_lease_ttl": "30m", "max_lease_ttl": "2h", "description": "after"},
    )
    assert status == 204, body
    status, body = await call(dev, "GET", "sys/mounts/kv1/tune")
    assert body["data"]["default_lease_ttl"] == 1800
    assert body["data"]["max_lease_ttl"] == 7200
    assert body["data"]["description"] == "after"
    entry = (await call(dev, "GET", "sys/mounts"))[1]["data"]["kv1/"]
    assert entry["description"] == "after"
    assert entry["config"]["default_lease_ttl"] == 1800
    assert entry["config"]["max_lease_ttl"] == 7200
    # tuning keeps the data
    await call(dev, "POST", "kv1/x", {"a": 1})
    await call(dev, "POST", "sys/mounts/kv1/tune", {"description": "again"})
    assert (await call(dev, "GET", "kv1/x"))[1]["data"] == {"a": 1}


@pytest.mark.parametrize(
    "body",
    [
        {"default_lease_ttl": "later"},
        {"max_lease_ttl": [1]},
        {"default_lease_ttl": -10},
        {"default_lease_ttl": "3h", "max_lease_ttl": "1h"},
        {"force_no_cache": "perhaps"},
        {"options": "v2"},
    ],
)
async def test_tune_rejects_bad_input(dev: DevServer, body: dict[str, Any]) -> None:
    await enable(dev, "kv1", type="kv")
    before = (await call(dev, "GET", "sys/mounts/kv1/tune"))[1]["data"]
    status, answer = await call(dev, "POST", "sys/mounts/kv1/tune", body)
    assert_error(status, answer, 400)
    assert (await call(dev, "GET", "sys/mounts/kv1/tune"))[1]["data"] == before


async def test_tune_of_a_missing_mount_is_400(dev: DevServer) -> None:
    status, body = await call(dev, "POST", "sys/mounts/missing/tune", {"description": "x"})
    assert_error(status, body, 400)
    status, body = await call(dev, "GET", "sys/mounts/missing/tune")
    assert_error(status, body, 400)


# --- disable and remount ---------------------------------------------------------------------


async def test_disable_removes_the_data(dev: DevServer) -> None:
    await enable(dev, "kv1", type="kv")
    await call(dev, "POST", "kv1/a", {"v": 1})
    await call(dev, "POST", "kv1/deep/b", {"v": 2})
    uuid = (await call(dev, "GET", "sys/mounts"))[1]["data"]["kv1/"]["uuid"]
    assert await mount_keys(dev, uuid)

    status, body = await call(dev, "DELETE", "sys/mounts/kv1")
    assert status == 204, body
    assert "kv1/" not in (await call(dev, "GET", "sys/mounts"))[1]["data"]
    assert await mount_keys(dev, uuid) == []
    status, body = await call(dev, "GET", "kv1/a")
    assert status == 404, body

    await enable(dev, "kv1", type="kv")
    status, body = await call(dev, "GET", "kv1/a")
    assert status == 404, body
    status, body = await call(dev, "LIST", "kv1/")
    assert status == 404, body

    status, body = await call(dev, "DELETE", "sys/mounts/never-there")
    assert_error(status, body, 400)


@pytest.mark.parametrize("path", ["sys", "cubbyhole"])
async def test_builtin_mounts_cannot_be_disabled_or_moved(dev: DevServer, path: str) -> None:
    status, body = await call(dev, "DELETE", f"sys/mounts/{path}")
    assert_error(status, body, 400)
    status, body = await call(dev, "POST", "sys/remount", {"from": path, "to": "elsewhere"})
    assert_error(status, body, 400)
    assert f"{path}/" in (await call(dev, "GET", "sys/mounts"))[1]["data"]


async def test_remount_keeps_the_data(dev: DevServer) -> None:
    await call(dev, "POST", "secret/data/app", {"data": {"k": "v"}})
    status, body = await call(dev, "POST", "sys/remount", {"from": "secret", "to": "moved/here"})
    assert status == 200, body
    mounts = (await call(dev, "GET", "sys/mounts"))[1]["data"]
    assert "secret/" not in mounts and mounts["moved/here/"]["options"] == {"version": "2"}
    status, body = await call(dev, "GET", "moved/here/data/app")
    assert status == 200 and body["data"]["data"] == {"k": "v"}, body
    status, body = await call(dev, "GET", "secret/data/app")
    assert status == 404, body


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"from": "secret"},
        {"to": "x"},
        {"from": "nothere", "to": "x"},
        {"from": "secret", "to": "sys/x"},
        {"from": "secret", "to": "cubbyhole"},
        {"from": "secret", "to": "auth/x"},
        {"from": "secret", "to": "kv1"},
        {"from": "secret", "to": "kv1/inner"},
        {"from": "secret", "to": ["x"]},
        {"from": "auth/token", "to": "auth/tok"},
    ],
)
async def test_remount_rejects_bad_input(dev: DevServer, body: dict[str, Any]) -> None:
    await enable(dev, "kv1", type="kv")
    before = (await call(dev, "GET", "sys/mounts"))[1]["data"]
    status, answer = await call(dev, "POST", "sys/remount", body)
    assert_error(status, answer, 400)
    assert (await call(dev, "GET", "sys/mounts"))[1]["data"] == before


# --- permissions ---------------------------------------------------------------------------


async def test_mount_endpoints_need_permission(dev: DevServer) -> None:
    token = await token_with(dev, 'path "secret/*" { capabilities = ["read"] }')
    for method, path, body in [
        ("GET", "sys/mounts", None),
        ("POST", "sys/mounts/new", {"type": "kv"}),
        ("GET", "sys/mounts/secret", None),
        ("DELETE", "sys/mounts/secret", None),
        ("GET", "sys/mounts/secret/tune", None),
        ("POST", "sys/mounts/secret/tune", {"description": "x"}),
        ("POST", "sys/remount", {"from": "secret", "to": "s2"}),
        ("GET", "sys/auth", None),
        ("POST", "sys/auth/userpass", {"type": "userpass"}),
    ]:
        status, answer = await call(dev, method, path, body, token=token)
        assert (status, answer) == (403, DENIED), (method, path)
    assert "secret/" in (await call(dev, "GET", "sys/mounts"))[1]["data"]


async def test_mount_management_with_a_policy(dev: DevServer) -> None:
    token = await token_with(
        dev,
        'path "sys/mounts" { capabilities = ["read"] }\n'
        'path "sys/mounts/*" { capabilities = ["create", "read", "update", "delete"] }\n',
    )
    assert (await call(dev, "GET", "sys/mounts", token=token))[0] == 200
    assert (await call(dev, "POST", "sys/mounts/mine", {"type": "kv"}, token=token))[0] == 204
    status, body = await call(
        dev, "POST", "sys/mounts/mine/tune", {"description": "d"}, token=token
    )
    assert status == 204, body
    assert (await call(dev, "DELETE", "sys/mounts/mine", token=token))[0] == 204
    # remount is a sudo path
    status, body = await call(
        dev, "POST", "sys/remount", {"from": "secret", "to": "s2"}, token=token
    )
    assert (status, body) == (403, DENIED)


# --- sys/auth --------------------------------------------------------------------------------


async def test_auth_listing_always_has_token(dev: DevServer) -> None:
    status, body = await call(dev, "GET", "sys/auth")
    assert status == 200, body
    entry = body["data"]["token/"]
    assert set(entry) >= ENTRY_FIELDS
    assert entry["type"] == "token"
    assert body["token/"] == entry
    # listing needs read, not sudo
    token = await token_with(dev, 'path "sys/auth" { capabilities = ["read"] }')
    status, body = await call(dev, "GET", "sys/auth", token=token)
    assert status == 200 and "token/" in body["data"], body


async def test_auth_token_cannot_be_disabled(dev: DevServer) -> None:
    status, body = await call(dev, "DELETE", "sys/auth/token")
    assert_error(status, body, 400, "token")
    assert "token/" in (await call(dev, "GET", "sys/auth"))[1]["data"]
    status, body = await call(dev, "GET", "auth/token/lookup-self")
    assert status == 200, body


@pytest.mark.parametrize(
    "body", [{"type": "nosuchmethod"}, {}, {"type": "token"}, {"type": "kv"}, {"type": 7}]
)
async def test_auth_enable_rejects_unknown_types(dev: DevServer, body: dict[str, Any]) -> None:
    status, answer = await call(dev, "POST", "sys/auth/mine", body)
    assert_error(status, answer, 400)
    assert list((await call(dev, "GET", "sys/auth"))[1]["data"]) == ["token/"]


async def test_auth_paths_below_sys_auth_need_sudo(dev: DevServer) -> None:
    plain = await token_with(
        dev, 'path "sys/auth/*" { capabilities = ["create", "read", "update", "delete"] }'
    )
    attempts: list[tuple[str, str, dict[str, Any] | None]] = [
        ("POST", "sys/auth/mine", {"type": "nosuchmethod"}),
        ("GET", "sys/auth/token/tune", None),
        ("POST", "sys/auth/token/tune", {"description": "x"}),
        ("DELETE", "sys/auth/token", None),
    ]
    for method, path, payload in attempts:
        status, answer = await call(dev, method, path, payload, token=plain)
        assert (status, answer) == (403, DENIED), (method, path)
    sudo = await token_with(
        dev, 'path "sys/auth/*" { capabilities = ["create", "read", "update", "sudo"] }'
    )
    status, body = await call(dev, "POST", "sys/auth/mine", {"type": "nosuchmethod"}, token=sudo)
    assert_error(status, body, 400, "nosuchmethod")
    status, body = await call(
        dev, "POST", "sys/auth/token/tune", {"description": "tok"}, token=sudo
    )
    assert status == 204, body
    status, body = await call(dev, "GET", "sys/auth/token/tune", token=sudo)
    assert status == 200 and body["data"]["description"] == "tok", body
