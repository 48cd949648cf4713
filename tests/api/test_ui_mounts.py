"""sys/internal/ui/mounts: what the Vault CLI asks before a ``kv`` command."""

from __future__ import annotations

from tests.conftest import DevServer


async def _token_with(dev: DevServer, policy: str) -> str:
    resp = await dev.client.put(
        "/v1/sys/policies/acl/ui-test", json={"policy": policy}, headers=dev.auth
    )
    assert resp.status == 204
    resp = await dev.client.post(
        "/v1/auth/token/create", json={"policies": ["ui-test"]}, headers=dev.auth
    )
    return str((await resp.json())["auth"]["client_token"])


async def test_mount_of_a_path_reports_kv_version(dev: DevServer) -> None:
    token = await _token_with(dev, 'path "secret/data/app/*" { capabilities = ["read"] }')
    resp = await dev.client.get(
        "/v1/sys/internal/ui/mounts/secret/app/db", headers={"X-Service-Token": token}
    )
    assert resp.status == 200
    data = (await resp.json())["data"]
    assert data["path"] == "secret/"
    assert data["type"] == "kv"
    assert data["options"] == {"version": "2"}


async def _mount_other(dev: DevServer) -> None:
    resp = await dev.client.post("/v1/sys/mounts/other", json={"type": "kv"}, headers=dev.auth)
    assert resp.status == 204


async def test_mount_of_a_path_needs_some_access(dev: DevServer) -> None:
    await _mount_other(dev)
    token = await _token_with(dev, 'path "secret/data/app/*" { capabilities = ["read"] }')
    resp = await dev.client.get(
        "/v1/sys/internal/ui/mounts/other/x", headers={"X-Service-Token": token}
    )
    assert resp.status == 403
    resp = await dev.client.get("/v1/sys/internal/ui/mounts/secret/x")
    assert resp.status == 403
    assert (await resp.json())["errors"]


async def test_listing_shows_only_reachable_mounts(dev: DevServer) -> None:
    await _mount_other(dev)
    token = await _token_with(dev, 'path "secret/*" { capabilities = ["read"] }')
    resp = await dev.client.get("/v1/sys/internal/ui/mounts", headers={"X-Service-Token": token})
    data = (await resp.json())["data"]
    assert "secret/" in data["secret"]
    assert "other/" not in data["secret"]
    root = await dev.client.get("/v1/sys/internal/ui/mounts", headers=dev.auth)
    root_data = (await root.json())["data"]
    assert {"sys/", "secret/", "cubbyhole/", "other/"} <= set(root_data["secret"])
    assert "token/" in root_data["auth"]
    anonymous = await dev.client.get("/v1/sys/internal/ui/mounts")
    assert (await anonymous.json())["data"] == {"secret": {}, "auth": {}}
