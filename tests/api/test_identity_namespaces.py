"""Identity across namespaces and templated policies, through the HTTP API."""

from __future__ import annotations

from typing import Any

from tests.api.helpers import call
from tests.conftest import DevServer


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
    return await call(dev.client, method, f"/v1/{path}", json_body=body, headers=headers)


async def test_identity_is_isolated_between_namespaces(dev: DevServer) -> None:
    for name in ("a", "b"):
        assert (await req(dev, "POST", f"sys/namespaces/{name}")).status == 200
    made = await req(dev, "POST", "identity/entity", {"name": "only-in-a"}, ns="a")
    assert made.status == 200, str(made)
    assert (await req(dev, "GET", "identity/entity/name/only-in-a", ns="a")).status == 200
    assert (await req(dev, "GET", "identity/entity/name/only-in-a", ns="b")).status == 404
    assert (await req(dev, "GET", "identity/entity/name/only-in-a")).status == 404
    entity_id = made.body["data"]["id"]
    assert (await req(dev, "GET", f"identity/entity/id/{entity_id}", ns="b")).status == 404
    # the same name can exist independently in another namespace
    assert (await req(dev, "POST", "identity/entity", {"name": "only-in-a"}, ns="b")).status == 200


async def test_templated_policy_resolves_the_logins_entity(dev: DevServer) -> None:
    assert (await req(dev, "POST", "sys/auth/userpass", {"type": "userpass"})).status == 204
    for user in ("alice", "bob"):
        body = {"password": f"pw-{user}-123", "token_policies": "per-user"}
        assert (await req(dev, "POST", f"auth/userpass/users/{user}", body)).status == 204
    mounts = (await req(dev, "GET", "sys/auth")).body["data"]
    accessor = mounts["userpass/"]["accessor"]
    policy = (
        f'path "secret/data/users/{{{{identity.entity.aliases.{accessor}.name}}}}/*" '
        '{ capabilities = ["create", "read", "update"] }'
    )
    assert (await req(dev, "PUT", "sys/policies/acl/per-user", {"policy": policy})).status == 204
    login = await call(
        dev.client, "POST", "/v1/auth/userpass/login/alice", json_body={"password": "pw-alice-123"}
    )
    token = login.body["auth"]["client_token"]
    assert login.body["auth"]["entity_id"]
    own = await req(dev, "PUT", "secret/data/users/alice/app", {"data": {"k": 1}}, token=token)
    assert own.status == 200, str(own)
    other = await req(dev, "PUT", "secret/data/users/bob/app", {"data": {"k": 1}}, token=token)
    assert other.status == 403
