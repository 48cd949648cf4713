"""The identity-provider auth method through the real app, against the emulator.

Each test enables the method at ``auth/idp`` and points ``base_url`` at a
``tests.support.idp_emulator.IdpEmulator`` on 127.0.0.1, so every provider
call crosses a real socket through ``api.outbound.AiohttpClient``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from openapi_spec_validator import validate

from api.outbound import AiohttpClient
from harness.ports import free_port
from node.core.login import PolicySet
from node.logical.response import Login
from node.routing.mounts import MountEntry
from tests.api.helpers import Reply, assert_error, call
from tests.support.idp_emulator import Fault, IdpEmulator, totp_code

if TYPE_CHECKING:
    from tests.conftest import DevServer

ROOT = "<root>"
API_TOKEN = "emulator-api-token"
#: The provider-call timeout in these tests (the "hang" fault waits past it).
TIMEOUT = 0.5


@dataclass
class Idp:
    dev: DevServer
    emu: IdpEmulator
    mount: str = "idp"

    async def call(
        self, method: str, path: str, body: Any = None, token: str | None = ROOT
    ) -> Reply:
        headers = {}
        if token == ROOT:
            headers = dict(self.dev.auth)
        elif token:
            headers = {"X-Service-Token": token}
        return await call(self.dev.client, method, f"/v1/{path}", json_body=body, headers=headers)

    async def configure(self, **fields: Any) -> Reply:
        body = {"org_name": "acme", "base_url": self.emu.origin, **fields}
        reply = await self.call("POST", f"auth/{self.mount}/config", body)
        assert reply.status in (200, 204), str(reply)
        return reply

    async def login(self, username: str, **body: Any) -> Reply:
        return await self.call("POST", f"auth/{self.mount}/login/{username}", body, token=None)

    async def logged_in(self, username: str, **body: Any) -> dict[str, Any]:
        reply = await self.login(username, **body)
        assert reply.status == 200, str(reply)
        assert reply.body["data"] is None
        auth: dict[str, Any] = reply.body["auth"]
        auth["warnings"] = reply.body["warnings"] or []
        return auth


@pytest.fixture
async def emulator() -> AsyncIterator[IdpEmulator]:
    emu = IdpEmulator(api_token=API_TOKEN)
    await emu.start()
    try:
        yield emu
    finally:
        await emu.close()


@pytest.fixture
async def idp(dev: DevServer, emulator: IdpEmulator) -> AsyncIterator[Idp]:
    http = AiohttpClient(max_timeout=TIMEOUT)
    dev.core.http_client = http  # type: ignore[attr-defined]  # the server's job once wired
    setup = Idp(dev, emulator)
    reply = await setup.call("POST", "sys/auth/idp", {"type": "idp"})
    assert reply.status == 204, str(reply)
    try:
        yield setup
    finally:
        await http.close()


# --- configuration ------------------------------------------------------------------------


async def test_config_read_shows_defaults_and_never_the_api_token(idp: Idp) -> None:
    assert (await idp.call("GET", "auth/idp/config")).status == 404
    reply = await idp.call(
        "POST", "auth/idp/config", {"org_name": "acme", "api_token": "s3cr3t-value"}
    )
    assert reply.status == 204, str(reply)
    read = await idp.call("GET", "auth/idp/config")
    assert read.status == 200
    assert read.data == {
        "org_name": "acme",
        "base_url": "",
        "bypass_idp_mfa": False,
        "token_bound_cidrs": [],
        "token_explicit_max_ttl": 0,
        "token_max_ttl": 0,
        "token_no_default_policy": False,
        "token_num_uses": 0,
        "token_period": 0,
        "token_policies": [],
        "token_ttl": 0,
        "token_type": "default",
    }
    assert b"s3cr3t-value" not in read.raw
    assert read.body["warnings"] is None


async def test_config_write_is_an_update_of_what_is_stored(idp: Idp) -> None:
    await idp.configure(api_token="t", token_ttl="1h", token_policies="a, B")
    reply = await idp.call("POST", "auth/idp/config", {"token_max_ttl": 7200})
    assert reply.status == 204, str(reply)
    data = (await idp.call("GET", "auth/idp/config")).data
    assert data["org_name"] == "acme"
    assert data["base_url"] == idp.emu.origin
    assert (data["token_ttl"], data["token_max_ttl"]) == (3600, 7200)
    assert data["token_policies"] == ["a", "B"]


async def test_config_requires_org_name_and_valid_values(idp: Idp) -> None:
    assert_error(await idp.call("POST", "auth/idp/config", {"api_token": "t"}), 400, "org_name")
    for bad in (
        {"org_name": "acme", "base_url": "ftp://x"},
        {"org_name": "ac/me"},
        {"org_name": "acme", "token_type": "odd"},
        {"org_name": "acme", "token_ttl": "soon"},
    ):
        assert_error(await idp.call("POST", "auth/idp/config", bad), 400)
    assert (await idp.call("GET", "auth/idp/config")).status == 404


async def test_config_warnings(idp: Idp) -> None:
    reply = await idp.configure()
    assert reply.status == 200
    assert any("api_token" in w for w in reply.body["warnings"])
    reply = await idp.configure(api_token="t", bypass_idp_mfa=True)
    assert [w for w in reply.body["warnings"] if "PASSWORD_EXPIRED" in w]
    read = await idp.call("GET", "auth/idp/config")
    assert read.data["bypass_idp_mfa"] is True
    assert any("MFA bypass" in w for w in read.body["warnings"])


# --- users and groups ---------------------------------------------------------------------


async def test_users_crud_and_list(idp: Idp) -> None:
    assert (await idp.call("LIST", "auth/idp/users")).status == 404
    reply = await idp.call(
        "POST", "auth/idp/users/alice", {"groups": "eng, Ops,eng", "policies": "P1,p2"}
    )
    assert reply.status == 204, str(reply)
    read = await idp.call("GET", "auth/idp/users/alice")
    assert read.data == {"groups": ["Ops", "eng"], "policies": ["default", "p1", "p2"]}
    # an update of one field keeps the other
    await idp.call("POST", "auth/idp/users/alice", {"policies": ["p3"]})
    read = await idp.call("GET", "auth/idp/users/alice")
    assert read.data == {"groups": ["Ops", "eng"], "policies": ["default", "p3"]}
    await idp.call("POST", "auth/idp/users/bob", {})
    assert (await idp.call("GET", "auth/idp/users/bob")).data == {
        "groups": [],
        "policies": ["default"],
    }
    assert (await idp.call("GET", "auth/idp/users/Alice")).status == 404  # case-sensitive
    listed = await call(
        idp.dev.client, "GET", "/v1/auth/idp/users", params={"list": "true"}, headers=idp.dev.auth
    )
    assert listed.data == {"keys": ["alice", "bob"]}
    assert (await idp.call("DELETE", "auth/idp/users/alice")).status == 204
    assert (await idp.call("GET", "auth/idp/users/alice")).status == 404
    assert (await idp.call("LIST", "auth/idp/users")).data == {"keys": ["bob"]}


async def test_groups_are_case_insensitive(idp: Idp) -> None:
    assert (await idp.call("LIST", "auth/idp/groups")).status == 404
    reply = await idp.call("POST", "auth/idp/groups/Admins", {"policies": ["Admin", "ops"]})
    assert reply.status == 204, str(reply)
    for name in ("Admins", "admins", "ADMINS"):
        read = await idp.call("GET", f"auth/idp/groups/{name}")
        assert read.data == {"policies": ["admin", "default", "ops"]}
    await idp.call("POST", "auth/idp/groups/empty", {})
    assert (await idp.call("GET", "auth/idp/groups/empty")).data == {"policies": ["default"]}
    assert (await idp.call("LIST", "auth/idp/groups")).data == {"keys": ["admins", "empty"]}
    assert (await idp.call("DELETE", "auth/idp/groups/ADMINS")).status == 204
    assert (await idp.call("GET", "auth/idp/groups/admins")).status == 404


async def test_odd_names_round_trip(idp: Idp) -> None:
    for name in ("team/a", ".hidden", "a.b"):
        reply = await idp.call("POST", f"auth/idp/groups/{name}", {"policies": "p"})
        assert reply.status == 204, (name, str(reply))
        assert (await idp.call("GET", f"auth/idp/groups/{name}")).status == 200, name
    keys = (await idp.call("LIST", "auth/idp/groups")).data["keys"]
    assert keys == [".hidden", "a.b", "team/a"]


async def test_management_needs_a_token(idp: Idp) -> None:
    await idp.configure(api_token="t")
    await idp.call("POST", "auth/idp/users/alice", {"policies": "p"})
    for method, path, body in (
        ("GET", "auth/idp/config", None),
        ("POST", "auth/idp/config", {"org_name": "x"}),
        ("LIST", "auth/idp/users", None),
        ("GET", "auth/idp/users/alice", None),
        ("POST", "auth/idp/users/alice", {"policies": "root"}),
        ("DELETE", "auth/idp/users/alice", None),
        ("LIST", "auth/idp/groups", None),
        ("POST", "auth/idp/groups/g", {"policies": "root"}),
        ("GET", "auth/idp/groups/g", None),
    ):
        reply = await idp.call(method, path, body, token=None)
        assert_error(reply, 403, "permission denied")
    assert (await idp.call("GET", "auth/idp/users/alice")).data["policies"] == ["default", "p"]


async def test_create_only_policy_cannot_update(idp: Idp) -> None:
    policy = (
        'path "auth/idp/users/*" { capabilities = ["create"] }\n'
        'path "auth/idp/groups/*" { capabilities = ["create"] }\n'
        'path "auth/idp/config" { capabilities = ["create"] }\n'
    )
    assert (await idp.call("PUT", "sys/policies/acl/creator", {"policy": policy})).status == 204
    created = await idp.call("POST", "auth/token/create", {"policies": ["creator"]})
    token = created.body["auth"]["client_token"]
    for path, body in (
        ("auth/idp/users/carol", {"policies": "a"}),
        ("auth/idp/groups/devs", {"policies": "a"}),
        ("auth/idp/config", {"org_name": "acme"}),
    ):
        assert (await idp.call("POST", path, body, token=token)).status in (200, 204), path
        # it exists now, so the same write is an update
        assert_error(await idp.call("POST", path, body, token=token), 403)
        assert_error(await idp.call("GET", path, token=token), 403)
    assert (await idp.call("GET", "auth/idp/users/carol")).data["policies"] == ["a", "default"]


# --- login --------------------------------------------------------------------------------


@dataclass
class RecordingIdentity:
    """Stands in for the identity subsystem to see what the method handed the core."""

    logins: list[Login] = field(default_factory=list)

    async def link_login(self, namespace_id: str, mount: MountEntry, login: Login) -> str:
        self.logins.append(login)
        return "entity-1"

    async def linked_entity(self, namespace_id: str, mount: MountEntry, login: Login) -> str | None:
        return None

    async def policies_for(self, entity_id: str, namespace_id: str) -> PolicySet:
        @dataclass
        class Found:
            identity_policies: list[str] = field(default_factory=list)
            external_namespace_policies: dict[str, list[str]] = field(default_factory=dict)

        return Found()

    async def is_disabled(self, entity_id: str, namespace_id: str) -> bool:
        return False

    async def template_values(self, entity_id: str, namespace_id: str) -> dict[str, str]:
        return {}

    def unregister(self, namespace_id: str) -> None:
        return None

    def invalidate(self) -> None:
        return None


async def test_login_merges_config_user_and_group_policies(idp: Idp) -> None:
    identity = RecordingIdentity()
    idp.dev.core.identity = identity
    idp.emu.add_user("alice", "pw", groups=["Engineering", "Unmapped"])
    await idp.configure(api_token=API_TOKEN, token_policies="cfg", token_ttl="1h")
    await idp.call("POST", "auth/idp/groups/engineering", {"policies": "eng"})
    await idp.call("POST", "auth/idp/groups/ops", {"policies": "ops"})
    await idp.call("POST", "auth/idp/groups/unused", {"policies": "nope"})
    await idp.call("POST", "auth/idp/users/alice", {"groups": "ops", "policies": "own"})

    auth = await idp.logged_in("alice", password="pw")
    expected = ["cfg", "default", "eng", "ops", "own"]
    assert auth["policies"] == expected
    assert auth["token_policies"] == expected
    assert auth["metadata"]["username"] == "alice"
    assert set(auth["metadata"]["policies"].split(",")) == {"eng", "ops", "own"}
    assert auth["display_name"] == "idp-alice"
    assert auth["lease_duration"] == 3600
    assert auth["entity_id"] == "entity-1"
    assert auth["warnings"] == []

    (login,) = identity.logins
    assert login.alias_name == "alice"
    assert login.group_aliases == ["Engineering", "Unmapped", "ops"]

    (authn,) = idp.emu.seen("authn")
    assert authn.json == {"username": "alice", "password": "pw"}
    assert "authorization" not in authn.headers
    (groups,) = idp.emu.seen("groups")
    assert groups.headers["authorization"] == f"SSWS {API_TOKEN}"
    assert groups.path == f"/api/v1/users/{idp.emu.users['alice'].id}/groups"

    lookup = await idp.call("GET", "auth/token/lookup-self", token=auth["client_token"])
    assert lookup.status == 200, str(lookup)
    assert lookup.data["policies"] == expected
    assert lookup.data["meta"]["username"] == "alice"


async def test_login_on_another_mount_path(idp: Idp) -> None:
    assert (await idp.call("POST", "sys/auth/corp", {"type": "idp"})).status == 204
    idp.mount = "corp"
    idp.emu.add_user("alice", "pw")
    await idp.configure(api_token=API_TOKEN)
    auth = await idp.logged_in("alice", password="pw")
    assert auth["display_name"] == "corp-alice"
    assert (await idp.call("GET", "auth/idp/config")).status == 404


async def test_bad_credentials(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw")
    await idp.configure(api_token=API_TOKEN)
    for user, password in (("alice", "wrong"), ("nobody", "pw")):
        reply = await idp.login(user, password=password)
        errors = assert_error(reply, 400, "Authentication failed (code=E0000004)")
        assert errors[0].startswith("idp auth failed")
    assert not idp.emu.seen("groups")


async def test_login_input_errors(idp: Idp) -> None:
    assert_error(await idp.login("alice", password="pw"), 400, "not configured")
    await idp.configure(api_token=API_TOKEN)
    assert_error(await idp.login("alice"), 400, "password")
    assert not idp.emu.requests


async def test_locked_out_fails_even_with_bypass(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", status="LOCKED_OUT")
    await idp.configure(api_token=API_TOKEN)
    assert_error(await idp.login("alice", password="pw"), 400, "idp authentication failed")
    await idp.configure(api_token=API_TOKEN, bypass_idp_mfa=True)
    assert_error(await idp.login("alice", password="pw"), 400, "idp authentication failed")


async def test_password_expired_needs_bypass(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", status="PASSWORD_EXPIRED")
    await idp.configure(api_token=API_TOKEN)
    assert_error(await idp.login("alice", password="pw"), 400, "idp authentication failed")
    await idp.configure(bypass_idp_mfa=True)
    auth = await idp.logged_in("alice", password="pw")
    assert auth["client_token"]
    assert any("expired" in w for w in auth["warnings"])


async def test_password_warn_logs_in_with_a_warning(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", status="PASSWORD_WARN", groups=["g"])
    await idp.configure(api_token=API_TOKEN)
    auth = await idp.logged_in("alice", password="pw")
    assert any("warning state" in w for w in auth["warnings"])


async def test_mfa_with_the_right_totp(idp: Idp) -> None:
    secret = b"0123456789abcdefghij"
    user = idp.emu.add_user("alice", "pw", totp_secret=secret, groups=["g"])
    await idp.configure(api_token=API_TOKEN)
    await idp.call("POST", "auth/idp/groups/g", {"policies": "gp"})
    auth = await idp.logged_in("alice", password="pw", totp=totp_code(secret))
    assert auth["policies"] == ["default", "gp"]
    assert len(idp.emu.seen("authn")) == 1
    (verify,) = idp.emu.seen("verify")
    assert verify.path == f"/api/v1/authn/factors/{user.factor_id}/verify"
    assert verify.json["passCode"] == totp_code(secret)
    assert verify.json["stateToken"].startswith("00")


async def test_mfa_with_a_wrong_totp(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", totp_passcode="123456")
    await idp.configure(api_token=API_TOKEN)
    reply = await idp.login("alice", password="pw", totp="654321")
    assert_error(reply, 400, "Invalid Passcode/Answer")
    assert len(idp.emu.seen("verify")) == 1
    assert not idp.emu.seen("groups")


async def test_mfa_without_totp(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", totp_passcode="123456")
    await idp.configure(api_token=API_TOKEN)
    assert_error(await idp.login("alice", password="pw"), 400, "'totp' passcode parameter")
    assert not idp.emu.seen("verify")


async def test_mfa_bypass_skips_verification(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", totp_passcode="123456", groups=["g"])
    await idp.configure(api_token=API_TOKEN, bypass_idp_mfa=True)
    auth = await idp.logged_in("alice", password="pw")
    assert auth["client_token"]
    assert not idp.emu.seen("verify")
    assert len(idp.emu.seen("groups")) == 1


async def test_mfa_then_expired_password(idp: Idp) -> None:
    # The provider asks for MFA before it reveals the expired password.
    idp.emu.add_user("alice", "pw", status="PASSWORD_EXPIRED", totp_passcode="123456")
    await idp.configure(api_token=API_TOKEN)
    reply = await idp.login("alice", password="pw", totp="123456")
    assert_error(reply, 400, "idp authentication failed")
    await idp.configure(bypass_idp_mfa=True)
    assert (await idp.login("alice", password="pw")).status == 200


async def test_mfa_enrollment(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", status="MFA_ENROLL")
    await idp.configure(api_token=API_TOKEN)
    assert_error(await idp.login("alice", password="pw"), 400, "MFA enrollment")
    await idp.configure(bypass_idp_mfa=True)
    assert (await idp.login("alice", password="pw")).status == 200


async def test_provider_groups_are_paged(idp: Idp) -> None:
    idp.emu.page_size = 2
    idp.emu.add_user("alice", "pw", groups=["g1", "g2", "g3", "g4", "g5"])
    await idp.configure(api_token=API_TOKEN)
    await idp.call("POST", "auth/idp/groups/g1", {"policies": "first"})
    await idp.call("POST", "auth/idp/groups/g5", {"policies": "last"})
    auth = await idp.logged_in("alice", password="pw")
    assert auth["policies"] == ["default", "first", "last"]
    pages = idp.emu.seen("groups")
    assert len(pages) == 3
    assert [p.query.get("after") for p in pages] == [None, "2", "4"]
    assert all(p.headers["authorization"] == f"SSWS {API_TOKEN}" for p in pages)


async def test_without_api_token_no_groups_are_looked_up(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", groups=["g"])
    await idp.configure()
    await idp.call("POST", "auth/idp/groups/g", {"policies": "provider-only"})
    await idp.call("POST", "auth/idp/groups/local", {"policies": "local"})
    await idp.call("POST", "auth/idp/users/alice", {"groups": "local"})
    auth = await idp.logged_in("alice", password="pw")
    assert auth["policies"] == ["default", "local"]
    assert idp.emu.seen("authn")
    assert not idp.emu.seen("groups")
    assert any("api_token" in w and "locally-defined" in w for w in auth["warnings"])


async def test_no_provider_groups_warns(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw")
    await idp.configure(api_token=API_TOKEN)
    auth = await idp.logged_in("alice", password="pw")
    assert (
        "no provider groups found; only policies from locally-defined groups available"
        in auth["warnings"]
    )


async def test_token_bound_cidrs(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw")
    await idp.configure(api_token=API_TOKEN, token_bound_cidrs="10.0.0.0/8")
    assert_error(await idp.login("alice", password="pw"), 403)
    assert not idp.emu.requests  # the password never left the server
    await idp.configure(token_bound_cidrs=["10.0.0.0/8", "127.0.0.0/8"])
    auth = await idp.logged_in("alice", password="pw")
    lookup = await idp.call("GET", "auth/token/lookup-self", token=auth["client_token"])
    assert lookup.status == 200, str(lookup)


# --- provider failures: always a 502 with a message ---------------------------------------


def assert_upstream(reply: Reply, fragment: str = "") -> None:
    errors = assert_error(reply, 502, fragment)
    assert errors and all(errors), errors
    assert "internal error" not in errors


@pytest.mark.parametrize("fault", list(Fault))
async def test_provider_faults_on_authn(idp: Idp, fault: Fault) -> None:
    idp.emu.add_user("alice", "pw")
    await idp.configure(api_token=API_TOKEN)
    idp.emu.fail(fault, "authn")
    assert_upstream(await idp.login("alice", password="pw"), "identity provider")


@pytest.mark.parametrize("fault", list(Fault))
async def test_provider_faults_on_groups(idp: Idp, fault: Fault) -> None:
    idp.emu.add_user("alice", "pw", groups=["g"])
    await idp.configure(api_token=API_TOKEN)
    idp.emu.fail(fault, "groups")
    assert_upstream(await idp.login("alice", password="pw"), "groups")


async def test_provider_fault_on_verify(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw", totp_passcode="123456")
    await idp.configure(api_token=API_TOKEN)
    idp.emu.fail(Fault.GARBAGE, "verify")
    assert_upstream(await idp.login("alice", password="pw", totp="123456"), "not JSON")


async def test_provider_down(idp: Idp) -> None:
    await idp.configure(base_url=f"http://127.0.0.1:{free_port()}")
    assert_upstream(await idp.login("alice", password="pw"), "request failed")


async def test_wrong_api_token_is_a_provider_failure(idp: Idp) -> None:
    idp.emu.add_user("alice", "pw")
    await idp.configure(api_token="not-the-token")
    assert_upstream(await idp.login("alice", password="pw"), "Invalid token provided")


async def test_next_links_to_other_hosts_are_not_followed(idp: Idp) -> None:
    idp.emu.page_size = 1
    idp.emu.next_link_origin = "http://127.0.0.2:9"
    idp.emu.add_user("alice", "pw", groups=["a", "b"])
    await idp.configure(api_token=API_TOKEN)
    assert_upstream(await idp.login("alice", password="pw"), "another origin")
    assert len(idp.emu.seen("groups")) == 1


async def test_login_without_an_outbound_client_says_so(idp: Idp) -> None:
    await idp.configure(api_token=API_TOKEN)
    idp.dev.core.http_client = None
    assert_error(await idp.login("alice", password="pw"), 500, "outbound HTTP client")


async def test_help_documents_every_path(idp: Idp) -> None:
    reply = await idp.call("GET", "auth/idp/?help=1")
    assert reply.status == 200, str(reply)
    help_text = reply.body["help"]
    for shown in ("auth/idp/config", "auth/idp/users/{name}", "auth/idp/login/{username}"):
        assert shown in help_text, shown
    assert "unauthenticated" in help_text
    validate(reply.body["openapi"])
    schemas = reply.body["openapi"]["components"]["schemas"]
    assert "api_token" in schemas["WriteAuthIdpConfigRequest"]["properties"]
    assert "password" in schemas["WriteAuthIdpLoginUsernameRequest"]["properties"]
