"""SPEC rule 10 end to end: an external group maps a provider identity into a
group of another namespace, whose policies then apply to the login's token.

ns ``team``: the idp method, an external group ``eng-ext`` with a group alias
``engineering`` on that mount. Root namespace: an internal group ``platform``
with ``member_group_ids = [eng-ext]`` and the root policy ``platform-read``
granting ``team/kv/*``. A user whose provider groups include ``engineering``
logs in to ``team`` and can read ``team/kv`` through ``platform``'s policy,
which shows up under ``external_namespace_policies``; removing the provider
group takes the access away at the next login, and editing ``platform`` applies
to live tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from api.outbound import AiohttpClient
from tests.api.helpers import call
from tests.conftest import DevServer
from tests.support.idp_emulator import IdpEmulator

API_TOKEN = "cross-ns-api-token"


@pytest.fixture
async def emulator() -> AsyncIterator[IdpEmulator]:
    emu = IdpEmulator(api_token=API_TOKEN)
    await emu.start()
    try:
        yield emu
    finally:
        await emu.close()


async def req(
    dev: DevServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    ns: str = "",
    token: str | None = None,
) -> Any:
    headers = {"X-Service-Token": token or dev.token}
    if ns:
        headers["X-Service-Namespace"] = ns
    reply = await call(dev.client, method, f"/v1/{path}", json_body=body, headers=headers)
    return reply


async def test_external_group_maps_identity_into_another_namespace(
    dev: DevServer, emulator: IdpEmulator
) -> None:
    http = AiohttpClient(max_timeout=2.0)
    dev.core.http_client = http
    try:
        assert (await req(dev, "POST", "sys/namespaces/team")).status == 200
        assert (await req(dev, "POST", "sys/mounts/kv", {"type": "kv"}, ns="team")).status == 204
        assert (await req(dev, "PUT", "kv/db", {"password": "p1"}, ns="team")).status == 204
        assert (await req(dev, "POST", "sys/auth/idp", {"type": "idp"}, ns="team")).status == 204
        config = {"org_name": "acme", "base_url": emulator.origin, "api_token": API_TOKEN}
        assert (await req(dev, "POST", "auth/idp/config", config, ns="team")).status in (200, 204)
        emulator.add_user("ann", "pw-ann", groups=["engineering"])

        mounts = (await req(dev, "GET", "sys/auth", ns="team")).body["data"]
        accessor = mounts["idp/"]["accessor"]
        ext = await req(
            dev, "POST", "identity/group", {"name": "eng-ext", "type": "external"}, ns="team"
        )
        assert ext.status == 200, str(ext)
        ext_id = ext.body["data"]["id"]
        alias = {"name": "engineering", "mount_accessor": accessor, "canonical_id": ext_id}
        assert (await req(dev, "POST", "identity/group-alias", alias, ns="team")).status == 200

        policy = 'path "team/kv/*" { capabilities = ["read"] }'
        assert (
            await req(dev, "PUT", "sys/policies/acl/platform-read", {"policy": policy})
        ).status == 204
        group = {"name": "platform", "policies": ["platform-read"], "member_group_ids": [ext_id]}
        platform = await req(dev, "POST", "identity/group", group)
        assert platform.status == 200, str(platform)
        root_ns_id = "root"

        login = await req(dev, "POST", "auth/idp/login/ann", {"password": "pw-ann"}, ns="team")
        assert login.status == 200, str(login)
        auth = login.body["auth"]
        assert auth["external_namespace_policies"] == {root_ns_id: ["platform-read"]}
        assert "platform-read" not in auth["token_policies"]
        token = auth["client_token"]
        read = await req(dev, "GET", "kv/db", ns="team", token=token)
        assert read.status == 200 and read.body["data"] == {"password": "p1"}
        write = await req(dev, "PUT", "kv/db", {"password": "x"}, ns="team", token=token)
        assert write.status == 403

        # Live: dropping the policy from the root group removes access at once.
        platform_id = platform.body["data"]["id"]
        update = {"policies": []}
        assert (await req(dev, "POST", f"identity/group/id/{platform_id}", update)).status in (
            200,
            204,
        )
        denied = await req(dev, "GET", "kv/db", ns="team", token=token)
        assert denied.status == 403

        # Membership follows the provider: without the group, the next login has no mapping.
        assert (
            await req(
                dev, "POST", f"identity/group/id/{platform_id}", {"policies": ["platform-read"]}
            )
        ).status in (200, 204)
        emulator.users["ann"].groups = []
        login = await req(dev, "POST", "auth/idp/login/ann", {"password": "pw-ann"}, ns="team")
        assert login.status == 200, str(login)
        assert login.body["auth"]["external_namespace_policies"] == {}
        read = await req(dev, "GET", "kv/db", ns="team", token=login.body["auth"]["client_token"])
        assert read.status == 403
    finally:
        await http.close()
