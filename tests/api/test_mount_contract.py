"""Mount contract gaps (issue 14): kv-v2 options, ``config.plugin_name``,
``listing_visibility = "unauth"`` and an auth mount's tuned ``token_type``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.api.helpers import dev_call as call

if TYPE_CHECKING:
    from tests.conftest import DevServer

PASSWORD = "correct horse battery staple"


async def ok(dev: DevServer, method: str, path: str, body: Any = None) -> dict[str, Any]:
    status, answer = await call(dev, method, path, body)
    assert status in (200, 204), answer
    return answer


async def test_kv_v2_mount_reads_with_version_2(dev: DevServer) -> None:
    await ok(dev, "POST", "sys/mounts/v2", {"type": "kv-v2"})
    listing = (await ok(dev, "GET", "sys/mounts"))["data"]["v2/"]
    assert listing["options"] == {"version": "2"}
    assert (await ok(dev, "GET", "sys/mounts/v2"))["data"]["options"] == {"version": "2"}
    assert (await ok(dev, "GET", "sys/mounts/v2/tune"))["data"]["options"] == {"version": "2"}
    # an explicit version 1 does not turn the alias into a v1 mount
    await ok(dev, "POST", "sys/mounts/v2b", {"type": "kv-v2", "options": {"version": "1"}})
    assert (await ok(dev, "GET", "sys/mounts/v2b"))["data"]["options"] == {"version": "2"}
    status, answer = await call(dev, "POST", "v2b/data/x", {"data": {"a": 1}})
    assert status == 200, answer


@pytest.mark.parametrize(
    "body",
    [
        {"type": "plugin", "config": {"plugin_name": "kv"}},
        {"config": {"plugin_name": "kv"}},
        {"type": "kv", "config": {"plugin_name": "kv"}},
    ],
)
async def test_config_plugin_name_is_accepted(dev: DevServer, body: dict[str, Any]) -> None:
    await ok(dev, "POST", "sys/mounts/named", body)
    entry = (await ok(dev, "GET", "sys/mounts/named"))["data"]
    assert entry["type"] == "kv"
    await ok(dev, "POST", "named/x", {"a": 1})
    assert (await ok(dev, "GET", "named/x"))["data"] == {"a": 1}


async def test_config_plugin_name_must_name_a_known_engine(dev: DevServer) -> None:
    status, answer = await call(
        dev, "POST", "sys/mounts/named", {"type": "plugin", "config": {"plugin_name": "nope"}}
    )
    assert status == 400 and answer["errors"], answer


async def test_unauth_listing_visibility(dev: DevServer) -> None:
    await ok(
        dev, "POST", "sys/mounts/public", {"type": "kv", "config": {"listing_visibility": "unauth"}}
    )
    await ok(dev, "POST", "sys/mounts/private", {"type": "kv", "description": "hush"})
    await ok(dev, "POST", "sys/auth/people", {"type": "userpass", "description": "staff"})
    await ok(dev, "POST", "sys/auth/people/tune", {"listing_visibility": "unauth"})
    tuned = (await ok(dev, "GET", "sys/auth/people/tune"))["data"]
    assert tuned["listing_visibility"] == "unauth"
    assert (await ok(dev, "GET", "sys/mounts/public"))["data"]["config"][
        "listing_visibility"
    ] == "unauth"

    status, anonymous = await call(dev, "GET", "sys/internal/ui/mounts", token=None)
    assert status == 200, anonymous
    assert anonymous["data"] == {
        "secret": {"public/": {"type": "kv", "description": "", "options": None}},
        "auth": {"people/": {"type": "userpass", "description": "staff", "options": None}},
    }
    # an authenticated caller still sees the unauth mount with its full entry
    rooted = (await ok(dev, "GET", "sys/internal/ui/mounts"))["data"]
    assert {"public/", "private/", "secret/"} <= set(rooted["secret"])
    assert "accessor" in rooted["secret"]["public/"]

    await ok(dev, "POST", "sys/mounts/public/tune", {"listing_visibility": "hidden"})
    status, anonymous = await call(dev, "GET", "sys/internal/ui/mounts", token=None)
    assert set(anonymous["data"]["secret"]) == set()


async def test_listing_visibility_rejects_unknown_values(dev: DevServer) -> None:
    status, answer = await call(
        dev, "POST", "sys/mounts/x", {"type": "kv", "config": {"listing_visibility": "public"}}
    )
    assert status == 400 and answer["errors"], answer
    status, answer = await call(dev, "POST", "sys/mounts/secret/tune", {"listing_visibility": 3})
    assert status == 400 and answer["errors"], answer


# --- token_type of an auth mount ----------------------------------------------------------


async def _userpass(dev: DevServer, user_type: str = "") -> None:
    await ok(dev, "POST", "sys/auth/up", {"type": "userpass"})
    body: dict[str, Any] = {"password": PASSWORD}
    if user_type:
        body["token_type"] = user_type
    await ok(dev, "POST", "auth/up/users/alice", body)


async def _login_type(dev: DevServer) -> str:
    status, answer = await call(
        dev, "POST", "auth/up/login/alice", {"password": PASSWORD}, token=None
    )
    assert status == 200, answer
    token_type: str = answer["auth"]["token_type"]
    status, looked = await call(
        dev, "GET", "auth/token/lookup-self", token=answer["auth"]["client_token"]
    )
    assert status == 200 and looked["data"]["type"] == token_type, looked
    return token_type


@pytest.mark.parametrize(
    ("mount_type", "user_type", "issued"),
    [
        ("default-service", "", "service"),
        ("default-batch", "", "batch"),
        ("default-batch", "default", "batch"),
        ("default-batch", "service", "service"),
        ("default-batch", "default-service", "service"),
        ("default-service", "batch", "batch"),
        ("default-service", "default-batch", "batch"),
        ("service", "batch", "service"),
        ("batch", "service", "batch"),
    ],
)
async def test_tuned_token_type_decides_as_the_reference(
    dev: DevServer, mount_type: str, user_type: str, issued: str
) -> None:
    await _userpass(dev, user_type)
    await ok(dev, "POST", "sys/auth/up/tune", {"token_type": mount_type})
    assert (await ok(dev, "GET", "sys/auth/up/tune"))["data"]["token_type"] == mount_type
    listed = (await ok(dev, "GET", "sys/auth"))["data"]["up/"]
    assert listed["config"]["token_type"] == mount_type
    assert await _login_type(dev) == issued


async def test_token_type_defaults_and_enable_config(dev: DevServer) -> None:
    await ok(dev, "POST", "sys/auth/up", {"type": "userpass", "config": {"token_type": "batch"}})
    await ok(dev, "POST", "auth/up/users/alice", {"password": PASSWORD})
    assert await _login_type(dev) == "batch"
    assert (await ok(dev, "GET", "sys/auth/token/tune"))["data"]["token_type"] == (
        "default-service"
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("sys/auth/token/tune", "batch"),
        ("sys/mounts/secret/tune", "batch"),
        ("sys/auth/up/tune", "default"),
        ("sys/auth/up/tune", "sometimes"),
    ],
)
async def test_token_type_tune_rejects(dev: DevServer, path: str, value: str) -> None:
    await _userpass(dev)
    status, answer = await call(dev, "POST", path, {"token_type": value})
    assert status == 400 and answer["errors"], answer
    assert await _login_type(dev) == "service"
