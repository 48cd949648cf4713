"""hvac, the Python Vault client from PyPI, against a real ``coffer server -dev`` process.

Every call goes through ``hvac.Client(url=..., token=...)`` the way a user writes it,
or through that client's own ``adapter`` where the raw HTTP response matters
(headers, the ``LIST`` verb, form bodies). hvac maps status codes to exceptions
(400 → InvalidRequest, 403 → Forbidden, 404 → InvalidPath, 503 → VaultDown) and
only reads ``errors`` from a body whose Content-Type is exactly
``application/json``, so the assertions on ``exc.errors`` check that too.

One dev server serves the whole module; each test uses its own paths and names.
The server's JSON request log (stderr) tells which HTTP verb hvac really sent.

Tests marked ``xfail(strict=True)`` are incompatibilities whose fix belongs in
``node/``; each reason names the missing behaviour.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import hvac  # type: ignore[import-untyped]
import hvac.adapters  # type: ignore[import-untyped]
import hvac.exceptions  # type: ignore[import-untyped]
import pytest

from harness.server import ServerProcess
from harness.server import dev_server as module_dev_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

#: hvac 2.x's own ``kv.v2.patch`` calls ``read_secret_version`` without
#: ``raise_on_deleted_version``, which makes hvac warn about a future default change.
#: Ignored only on the test that calls ``patch``; everything else passes the argument.
HVAC_PATCH_WARNING = (
    "ignore:The raise_on_deleted_version parameter will change its default value:DeprecationWarning"
)

TOKEN_LENGTH = 28  # "hvs." + 24 characters: the length a generate-root OTP must have

Connect = Callable[..., hvac.Client]


# -- the server -----------------------------------------------------------------


@dataclass
class DevServer:
    process: ServerProcess
    root_token: str
    unseal_key: str

    @property
    def url(self) -> str:
        return self.process.base_url

    def logged_requests(self) -> list[tuple[str, str]]:
        """``(method, path)`` of every request the server has logged, oldest first."""
        return [
            (str(event["method"]), str(event["path"]))
            for event in self.process.log_events()
            if event.get("event") == "http.request"
        ]

    def methods_for(self, path: str, since: int = 0) -> list[str]:
        return [m for m, p in self.logged_requests()[since:] if p == path]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    root_token = "root-" + secrets.token_hex(8)
    # requests (under hvac) honours proxy variables; the loopback server must be direct.
    with pytest.MonkeyPatch.context() as env:
        for name in ("http_proxy", "https_proxy", "all_proxy"):
            env.delenv(name, raising=False)
            env.delenv(name.upper(), raising=False)
        # Requests are logged at debug only; logged_requests() reads those lines.
        with module_dev_server(
            tmp_path_factory.mktemp("hvac-dev"), root_token, log_level="debug"
        ) as process:
            banner = process.stdout_text()
            keys = re.findall(r"^Unseal Key: (\S+)$", banner, re.MULTILINE)
            assert len(keys) == 1, banner
            assert re.search(rf"^Root Token: {root_token}$", banner, re.MULTILINE), banner
            yield DevServer(process, root_token, keys[0])


@pytest.fixture
def connect(server: DevServer) -> Iterator[Connect]:
    """``connect(token=None, **kwargs)``: an ``hvac.Client`` (root token by default)."""
    made: list[hvac.Client] = []

    def make(token: str | None = None, **kwargs: Any) -> hvac.Client:
        client = hvac.Client(
            url=server.url, token=server.root_token if token is None else token, **kwargs
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.adapter.close()


@pytest.fixture
def root(connect: Connect) -> hvac.Client:
    return connect()


def _policy(client: hvac.Client, name: str, rules: str) -> None:
    client.sys.create_or_update_policy(name=name, policy=rules)


# -- status ----------------------------------------------------------------------


def test_status_endpoints(root: hvac.Client, connect: Connect) -> None:
    assert root.is_authenticated() is True

    health = root.sys.read_health_status(method="GET")
    assert isinstance(health, dict), health  # the JSON adapter decodes only a 200
    assert (health["initialized"], health["sealed"], health["standby"]) == (True, False, False)
    # hvac sends booleans as ``True``/``False`` in the query string
    assert root.sys.read_health_status(method="GET", standby_ok=True)["sealed"] is False
    custom = root.sys.read_health_status(method="GET", active_code=299)
    assert custom.status_code == 299 and custom.json()["initialized"] is True
    head = root.sys.read_health_status(method="HEAD")
    assert (head.status_code, head.content) == (200, b"")

    anonymous = connect(token="")  # seal-status and init need no token
    seal = anonymous.sys.read_seal_status()
    assert (seal["type"], seal["sealed"], seal["t"], seal["n"], seal["progress"]) == (
        "shamir",
        False,
        1,
        1,
        0,
    )
    assert anonymous.sys.is_initialized() is True
    assert anonymous.sys.is_sealed() is False
    assert anonymous.sys.read_init_status() == {"initialized": True}


# -- KV version 2 ----------------------------------------------------------------


def test_kv_v2_round_trip(root: hvac.Client) -> None:
    kv = root.secrets.kv.v2
    path = "hvac-rt/app"

    created = kv.create_or_update_secret(path=path, secret={"user": "alice", "n": 1})
    assert created["data"]["version"] == 1
    read = kv.read_secret_version(path=path, raise_on_deleted_version=True)
    assert read["data"]["data"] == {"user": "alice", "n": 1}
    assert read["data"]["metadata"]["version"] == 1

    # check-and-set: the current version succeeds, a stale one and cas=0 do not
    second = kv.create_or_update_secret(path=path, secret={"user": "bob"}, cas=1)
    assert second["data"]["version"] == 2
    for stale in (1, 0):
        with pytest.raises(hvac.exceptions.InvalidRequest) as rejected:
            kv.create_or_update_secret(path=path, secret={"user": "eve"}, cas=stale)
        assert rejected.value.errors == [
            "check-and-set parameter did not match the current version"
        ]
    assert (
        kv.create_or_update_secret(path="hvac-rt/other", secret={"a": "b"}, cas=0)["data"][
            "version"
        ]
        == 1
    )
    old = kv.read_secret_version(path=path, version=1, raise_on_deleted_version=True)
    assert old["data"]["data"] == {"user": "alice", "n": 1}

    assert kv.list_secrets(path="hvac-rt")["data"]["keys"] == ["app", "other"]
    assert "hvac-rt/" in kv.list_secrets(path="")["data"]["keys"]
    meta = kv.read_secret_metadata(path=path)["data"]
    assert (meta["current_version"], meta["oldest_version"]) == (2, 1)
    assert sorted(meta["versions"]) == ["1", "2"]

    # soft delete of the latest version, then undelete
    assert kv.delete_latest_version_of_secret(path=path).status_code == 204
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret_version(path=path, raise_on_deleted_version=True)
    deleted = kv.read_secret_version(path=path, raise_on_deleted_version=False)
    assert deleted["data"]["data"] is None
    assert deleted["data"]["metadata"]["version"] == 2
    assert deleted["data"]["metadata"]["deletion_time"] != ""
    assert kv.undelete_secret_versions(path=path, versions=[2]).status_code == 204
    read = kv.read_secret_version(path=path, raise_on_deleted_version=True)
    assert read["data"]["data"] == {"user": "bob"}

    # destroy version 1: gone for good, and (never soft-deleted) hvac re-raises the 404
    assert kv.destroy_secret_versions(path=path, versions=[1]).status_code == 204
    with pytest.raises(hvac.exceptions.InvalidPath) as destroyed:
        kv.read_secret_version(path=path, version=1, raise_on_deleted_version=False)
    assert destroyed.value.json["data"]["metadata"]["destroyed"] is True
    versions = kv.read_secret_metadata(path=path)["data"]["versions"]
    assert (versions["1"]["destroyed"], versions["2"]["destroyed"]) == (True, False)

    # soft delete of a chosen version
    assert kv.delete_secret_versions(path=path, versions=[2]).status_code == 204
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret_version(path=path, raise_on_deleted_version=True)

    assert kv.delete_metadata_and_all_versions(path=path).status_code == 204
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret_metadata(path=path)
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret_version(path=path, raise_on_deleted_version=False)
    assert kv.list_secrets(path="hvac-rt")["data"]["keys"] == ["other"]


@pytest.mark.filterwarnings(HVAC_PATCH_WARNING)
def test_kv_v2_hvac_patch_reads_then_writes_with_cas(root: hvac.Client, server: DevServer) -> None:
    """hvac 2.x's ``patch`` is a GET then a POST with ``cas`` = the version it read."""
    kv = root.secrets.kv.v2
    kv.create_or_update_secret(path="hvac/patched", secret={"a": "1", "b": "2"})
    before = len(server.logged_requests())

    patched = kv.patch(path="hvac/patched", secret={"b": "3", "c": "4"})

    assert patched["data"]["version"] == 2
    assert server.methods_for("/v1/secret/data/hvac/patched", since=before) == ["GET", "POST"]
    read = kv.read_secret_version(path="hvac/patched", raise_on_deleted_version=True)
    assert read["data"]["data"] == {"a": "1", "b": "3", "c": "4"}
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.patch(path="hvac/never-written", secret={"x": "y"})


def test_kv_v2_merge_patch_verb(root: hvac.Client) -> None:
    kv = root.secrets.kv.v2
    kv.create_or_update_secret(path="hvac/merge", secret={"a": "1", "b": "2"})

    patched = root.adapter.request(
        "PATCH",
        "/v1/secret/data/hvac/merge",
        json={"data": {"b": None, "c": "3"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )

    assert patched["data"]["version"] == 2
    read = kv.read_secret_version(path="hvac/merge", raise_on_deleted_version=True)
    assert read["data"]["data"] == {"a": "1", "c": "3"}  # null removes a key
    with pytest.raises(hvac.exceptions.UnexpectedError) as unsupported:  # 415
        root.adapter.request("PATCH", "/v1/secret/data/hvac/merge", json={"data": {"d": "4"}})
    assert "merge-patch+json" in unsupported.value.errors[0]


def test_kv_v2_update_metadata(root: hvac.Client) -> None:
    kv = root.secrets.kv.v2
    kv.create_or_update_secret(path="hvac/meta", secret={"a": "1"})

    kv.update_metadata(path="hvac/meta", max_versions=3, custom_metadata={"owner": "ops"})

    meta = kv.read_secret_metadata(path="hvac/meta")["data"]
    assert meta["max_versions"] == 3
    assert meta["custom_metadata"] == {"owner": "ops"}


def test_kv_v2_configuration(root: hvac.Client) -> None:
    mount = "hvac-kvcfg"
    root.sys.enable_secrets_engine("kv", path=mount, options={"version": "2"})
    kv = root.secrets.kv.v2
    try:
        configured = kv.configure(
            max_versions=2, cas_required=True, delete_version_after="1h", mount_point=mount
        )

        assert configured.status_code == 204
        config = kv.read_configuration(mount_point=mount)["data"]
        assert (config["max_versions"], config["cas_required"]) == (2, True)
        # cas_required: a write without cas is refused, one with it is accepted
        with pytest.raises(hvac.exceptions.InvalidRequest) as no_cas:
            kv.create_or_update_secret(path="s", secret={"v": "0"}, mount_point=mount)
        assert "check-and-set" in no_cas.value.errors[0]
        for version in range(1, 4):
            written = kv.create_or_update_secret(
                path="s", secret={"v": str(version)}, cas=version - 1, mount_point=mount
            )
            assert written["data"]["version"] == version
            assert written["data"]["deletion_time"] != ""  # delete_version_after applies
        # max_versions=2: version 1 has been pruned
        meta = kv.read_secret_metadata(path="s", mount_point=mount)["data"]
        assert sorted(meta["versions"]) == ["2", "3"]
    finally:
        root.sys.disable_secrets_engine(mount)


def test_kv_v2_configuration_reports_a_go_duration(root: hvac.Client) -> None:
    mount = "hvac-kvdur"
    root.sys.enable_secrets_engine("kv", path=mount, options={"version": "2"})
    try:
        root.secrets.kv.v2.configure(delete_version_after="1h", mount_point=mount)
        config = root.secrets.kv.v2.read_configuration(mount_point=mount)["data"]
        assert config["delete_version_after"] == "1h0m0s"
    finally:
        root.sys.disable_secrets_engine(mount)


# -- KV version 1 ----------------------------------------------------------------


def test_kv_v1(root: hvac.Client) -> None:
    assert root.sys.enable_secrets_engine("kv", path="kv1", options={"version": "1"}).ok
    kv = root.secrets.kv.v1

    assert kv.create_or_update_secret(path="app/db", secret={"pw": "x"}, mount_point="kv1").ok
    assert kv.create_or_update_secret(path="app/api", secret={"k": "y"}, mount_point="kv1").ok
    assert kv.read_secret(path="app/db", mount_point="kv1")["data"] == {"pw": "x"}
    assert kv.list_secrets(path="app", mount_point="kv1")["data"]["keys"] == ["api", "db"]
    # a KV v1 write replaces the whole secret: no versions, no metadata
    kv.create_or_update_secret(path="app/db", secret={"pw2": "z"}, mount_point="kv1")
    assert kv.read_secret(path="app/db", mount_point="kv1")["data"] == {"pw2": "z"}

    assert kv.delete_secret(path="app/db", mount_point="kv1").status_code == 204
    with pytest.raises(hvac.exceptions.InvalidPath):
        kv.read_secret(path="app/db", mount_point="kv1")
    assert kv.list_secrets(path="app", mount_point="kv1")["data"]["keys"] == ["api"]
    mounts = root.sys.list_mounted_secrets_engines()["data"]
    assert mounts["kv1/"]["options"] == {"version": "1"}


# -- mounts ----------------------------------------------------------------------


def test_mounts(root: hvac.Client) -> None:
    mounts = root.sys.list_mounted_secrets_engines()
    # mount listings are also injected at the top level, as hvac's callers expect
    for listing in (mounts, mounts["data"]):
        assert listing["secret/"]["type"] == "kv"
        assert listing["secret/"]["options"] == {"version": "2"}
        assert listing["sys/"]["type"] == "system"
        assert listing["cubbyhole/"]["type"] == "cubbyhole"

    enabled = root.sys.enable_secrets_engine(
        "kv", path="hvac-m1", description="first", options={"version": "2"}
    )
    assert enabled.status_code == 204
    with pytest.raises(hvac.exceptions.InvalidRequest) as in_use:
        root.sys.enable_secrets_engine("kv", path="hvac-m1")
    assert "already in use" in in_use.value.errors[0]
    assert root.sys.retrieve_mount_option("hvac-m1", "version") == "2"

    tuned = root.sys.tune_mount_configuration(
        path="hvac-m1", default_lease_ttl="30m", max_lease_ttl="2h", description="tuned"
    )
    assert tuned.status_code == 204
    config = root.sys.read_mount_configuration(path="hvac-m1")
    assert (config["default_lease_ttl"], config["max_lease_ttl"]) == (1800, 7200)
    assert config["data"]["description"] == "tuned"

    root.secrets.kv.v2.create_or_update_secret(path="x", secret={"k": "v"}, mount_point="hvac-m1")
    moved = root.sys.move_backend("hvac-m1", "hvac-m2")
    assert moved["data"]["migration_id"]
    read = root.secrets.kv.v2.read_secret_version(
        path="x", mount_point="hvac-m2", raise_on_deleted_version=True
    )
    assert read["data"]["data"] == {"k": "v"}
    listing = root.sys.list_mounted_secrets_engines()["data"]
    assert "hvac-m2/" in listing and "hvac-m1/" not in listing
    with pytest.raises(hvac.exceptions.InvalidPath):
        root.secrets.kv.v2.read_secret_version(
            path="x", mount_point="hvac-m1", raise_on_deleted_version=True
        )

    assert root.sys.disable_secrets_engine("hvac-m2").status_code == 204
    assert "hvac-m2/" not in root.sys.list_mounted_secrets_engines()["data"]

    auth = root.sys.list_auth_methods()
    assert auth["data"]["token/"]["type"] == "token"
    assert auth["token/"]["type"] == "token"


def test_move_backend_status(root: hvac.Client) -> None:
    root.sys.enable_secrets_engine("kv", path="hvac-s1", options={"version": "1"})
    moved = root.sys.move_backend("hvac-s1", "hvac-s2")
    try:
        status = root.adapter.get(f"/v1/sys/remount/status/{moved['data']['migration_id']}")
        info = status["data"]["migration_info"]
        assert (info["source_mount"], info["target_mount"]) == ("hvac-s1/", "hvac-s2/")
        assert info["status"] == "success"
    finally:
        root.sys.disable_secrets_engine("hvac-s2")


# -- policies --------------------------------------------------------------------


def test_policies(root: hvac.Client) -> None:
    rules = 'path "secret/data/hvac-pol/*" {\n  capabilities = ["read", "list"]\n}\n'

    assert root.sys.create_or_update_policy(name="hvac-p1", policy=rules).status_code == 204
    read = root.sys.read_policy(name="hvac-p1")
    assert read["data"]["rules"] == rules and read["rules"] == rules
    assert read["data"]["name"] == "hvac-p1"
    listed = root.sys.list_policies()
    assert {"default", "root", "hvac-p1"} <= set(listed["data"]["policies"])
    assert "hvac-p1" in listed["policies"]
    # hvac serialises a dict policy to JSON text, which is HCL-compatible
    as_dict = {"path": {"secret/data/hvac-json/*": {"capabilities": ["read"]}}}
    root.sys.create_or_update_policy(name="hvac-p2", policy=as_dict)
    assert json.loads(root.sys.read_policy(name="hvac-p2")["data"]["rules"]) == as_dict
    with pytest.raises(hvac.exceptions.InvalidRequest) as bad:
        root.sys.create_or_update_policy(name="hvac-bad", policy='path "x" {')
    assert "failed to parse policy" in bad.value.errors[0]

    # the sys/policies/acl spelling
    assert root.sys.create_or_update_acl_policy(name="hvac-p3", policy=rules).status_code == 204
    acl = root.sys.read_acl_policy(name="hvac-p3")
    assert (acl["data"]["name"], acl["data"]["policy"]) == ("hvac-p3", rules)
    assert {"hvac-p1", "hvac-p2", "hvac-p3"} <= set(root.sys.list_acl_policies()["data"]["keys"])
    assert root.sys.delete_acl_policy(name="hvac-p3").status_code == 204
    with pytest.raises(hvac.exceptions.InvalidPath):
        root.sys.read_acl_policy(name="hvac-p3")

    for name in ("hvac-p1", "hvac-p2"):
        assert root.sys.delete_policy(name=name).status_code == 204
        with pytest.raises(hvac.exceptions.InvalidPath):
            root.sys.read_policy(name=name)
    assert "hvac-p1" not in root.sys.list_policies()["data"]["policies"]


# -- tokens ----------------------------------------------------------------------


def test_tokens(root: hvac.Client, connect: Connect) -> None:
    _policy(
        root,
        "hvac-tok",
        'path "secret/data/hvac-tok/*" { capabilities = ["read"] }\n'
        'path "auth/token/create" { capabilities = ["update"] }\n',
    )
    tokens = root.auth.token

    created = tokens.create(policies=["hvac-tok"], ttl="1h", meta={"user": "alice"})
    auth = created["auth"]
    token, accessor = auth["client_token"], auth["accessor"]
    assert auth["policies"] == ["default", "hvac-tok"]
    assert (auth["lease_duration"], auth["renewable"], auth["orphan"]) == (3600, True, False)
    assert auth["metadata"] == {"user": "alice"}

    user = connect(token=token)
    assert user.is_authenticated() is True
    me = user.auth.token.lookup_self()["data"]
    assert (me["id"], me["accessor"], me["policies"]) == (token, accessor, ["default", "hvac-tok"])
    assert 3500 < me["ttl"] <= 3600
    assert tokens.lookup(token)["data"]["meta"] == {"user": "alice"}
    by_accessor = tokens.lookup_accessor(accessor)["data"]
    assert (by_accessor["id"], by_accessor["accessor"]) == ("", accessor)
    assert tokens.lookup_self()["data"]["policies"] == ["root"]

    assert tokens.renew(token, increment="2h")["auth"]["lease_duration"] == 7200
    assert user.auth.token.renew_self(increment=600)["auth"]["lease_duration"] == 600
    assert user.auth.token.lookup_self()["data"]["ttl"] <= 600

    # a child of the user's token is revoked with it; an orphan is not
    child = user.auth.token.create(policies=["hvac-tok"], ttl="10m")["auth"]["client_token"]
    orphan = tokens.create_orphan(policies=["hvac-tok"], ttl="10m")["auth"]
    assert orphan["orphan"] is True
    assert tokens.lookup(orphan["client_token"])["data"]["orphan"] is True

    assert tokens.revoke(token).status_code == 204
    assert user.is_authenticated() is False
    assert connect(token=child).is_authenticated() is False
    with pytest.raises(hvac.exceptions.Forbidden):
        tokens.lookup(token)
    assert connect(token=orphan["client_token"]).is_authenticated() is True

    assert tokens.revoke_accessor(orphan["accessor"]).status_code == 204
    assert connect(token=orphan["client_token"]).is_authenticated() is False
    with pytest.raises(hvac.exceptions.InvalidRequest):
        tokens.lookup_accessor(orphan["accessor"])
    with pytest.raises(hvac.exceptions.InvalidRequest) as bad_ttl:
        tokens.create(ttl="forever")
    assert "ttl" in bad_ttl.value.errors[0]


def test_token_roles(root: hvac.Client) -> None:
    _policy(root, "hvac-role", 'path "secret/data/hvac-role/*" { capabilities = ["read"] }')
    tokens = root.auth.token

    written = tokens.create_or_update_role(
        "hvac-r1", allowed_policies=["hvac-role"], orphan=True, renewable=True, token_period="1h"
    )
    assert written.status_code == 204
    role = tokens.read_role("hvac-r1")["data"]
    assert role["name"] == "hvac-r1"
    assert (role["allowed_policies"], role["orphan"], role["renewable"]) == (
        ["hvac-role"],
        True,
        True,
    )
    assert role["token_period"] == 3600
    assert "hvac-r1" in tokens.list_roles()["data"]["keys"]

    issued = tokens.create(role_name="hvac-r1", policies=["hvac-role"])["auth"]
    assert issued["orphan"] is True
    assert issued["policies"] == ["default", "hvac-role"]
    assert tokens.lookup(issued["client_token"])["data"]["period"] == 3600
    with pytest.raises(hvac.exceptions.InvalidRequest):
        tokens.create(role_name="hvac-r1", policies=["root"])  # not an allowed policy

    assert tokens.delete_role("hvac-r1").status_code == 204
    with pytest.raises(hvac.exceptions.InvalidPath):
        tokens.read_role("hvac-r1")
    with pytest.raises(hvac.exceptions.InvalidPath):
        tokens.list_roles()  # an empty listing is a 404, as in the reference


def test_restricted_token_and_invalid_tokens(root: hvac.Client, connect: Connect) -> None:
    _policy(
        root,
        "hvac-limited",
        'path "secret/data/hvac-allowed/*" { capabilities = ["create", "read", "update"] }\n'
        'path "secret/metadata/hvac-allowed/*" { capabilities = ["list"] }\n',
    )
    token = root.auth.token.create(policies=["hvac-limited"], ttl="10m")["auth"]["client_token"]
    user = connect(token=token)
    kv = user.secrets.kv.v2

    assert kv.create_or_update_secret(path="hvac-allowed/x", secret={"a": "1"})["data"]["version"]
    read = kv.read_secret_version(path="hvac-allowed/x", raise_on_deleted_version=True)
    assert read["data"]["data"] == {"a": "1"}
    for denied in (
        lambda: kv.read_secret_version(path="hvac-denied/x", raise_on_deleted_version=True),
        lambda: kv.create_or_update_secret(path="hvac-denied/x", secret={"a": "1"}),
        lambda: kv.delete_metadata_and_all_versions(path="hvac-allowed/x"),
        user.sys.list_mounted_secrets_engines,
        lambda: user.sys.create_or_update_policy(name="hvac-escalate", policy='path "*" {}'),
        lambda: user.auth.token.create(policies=["root"]),
    ):
        with pytest.raises(hvac.exceptions.Forbidden) as forbidden:
            denied()
        assert forbidden.value.errors == ["permission denied"]

    assert connect(token="hvs.not-a-real-token").is_authenticated() is False
    assert connect(token="").is_authenticated() is False
    with pytest.raises(hvac.exceptions.Forbidden):
        connect(token="hvs.not-a-real-token").secrets.kv.v2.read_secret_version(
            path="hvac-allowed/x", raise_on_deleted_version=True
        )


# -- response wrapping -------------------------------------------------------------


def test_response_wrapping(root: hvac.Client, connect: Connect) -> None:
    _policy(root, "hvac-wrap", 'path "secret/data/hvac-wrap/*" { capabilities = ["read"] }')

    wrapped = root.auth.token.create(policies=["hvac-wrap"], ttl="1h", wrap_ttl="60s")
    info = wrapped["wrap_info"]
    assert wrapped["auth"] is None and wrapped["data"] is None
    assert (info["ttl"], info["creation_path"]) == (60, "auth/token/create")
    assert info["token"] and info["wrapped_accessor"]

    unwrapped = root.sys.unwrap(info["token"])
    inner = unwrapped["auth"]
    assert inner["accessor"] == info["wrapped_accessor"]
    assert inner["policies"] == ["default", "hvac-wrap"]
    assert connect(token=inner["client_token"]).is_authenticated() is True
    with pytest.raises(hvac.exceptions.InvalidRequest) as twice:
        root.sys.unwrap(info["token"])  # single use
    assert "wrapping token is not valid" in twice.value.errors[0]

    # sys/wrapping/wrap, unwrapped by presenting the wrapping token itself
    sealed = root.sys.wrap(payload={"hello": "world"}, ttl="60s")["wrap_info"]
    assert sealed["creation_path"] == "sys/wrapping/wrap"
    assert connect(token=sealed["token"]).sys.unwrap()["data"] == {"hello": "world"}

    # any read, wrapped through the adapter's wrap_ttl (the X-Vault-Wrap-TTL header)
    root.secrets.kv.v2.create_or_update_secret(path="hvac-wrap/s", secret={"k": "v"})
    raw = root.adapter.get("/v1/secret/data/hvac-wrap/s", wrap_ttl="30s")
    assert raw["data"] is None
    assert (raw["wrap_info"]["ttl"], raw["wrap_info"]["creation_path"]) == (
        30,
        "secret/data/hvac-wrap/s",
    )
    assert root.sys.unwrap(raw["wrap_info"]["token"])["data"]["data"] == {"k": "v"}

    # hvac's auth_cubbyhole: log in with a wrapped token
    login = connect(token="")
    second = root.auth.token.create(policies=["hvac-wrap"], ttl="1h", wrap_ttl="1m")
    login.auth_cubbyhole(second["wrap_info"]["token"])
    assert login.auth.token.lookup_self()["data"]["policies"] == ["default", "hvac-wrap"]


# -- capabilities, keys, root generation -------------------------------------------------


def test_capabilities(root: hvac.Client, connect: Connect) -> None:
    _policy(root, "hvac-caps", 'path "secret/data/hvac-caps/*" { capabilities = ["read", "list"] }')
    created = root.auth.token.create(policies=["hvac-caps"], ttl="10m")["auth"]
    paths = ["secret/data/hvac-caps/a", "sys/mounts"]

    by_token = root.sys.get_capabilities(paths=paths, token=created["client_token"])
    assert by_token["data"] == {paths[0]: ["list", "read"], paths[1]: ["deny"]}
    by_accessor = root.sys.get_capabilities(paths=paths[:1], accessor=created["accessor"])
    assert by_accessor["data"][paths[0]] == ["list", "read"]
    assert by_accessor["data"]["capabilities"] == ["list", "read"]
    own = connect(token=created["client_token"]).sys.get_capabilities(paths=paths)
    assert own["data"] == by_token["data"]
    # one path: the reference also answers it under "capabilities" (backwards compatibility)
    assert root.sys.get_capabilities(paths=["anything/at/all"])["data"] == {
        "anything/at/all": ["root"],
        "capabilities": ["root"],
    }


def test_encryption_key_status_and_rotation(root: hvac.Client) -> None:
    root.secrets.kv.v2.create_or_update_secret(path="hvac-rotate/s", secret={"k": "v"})
    before = root.sys.get_encryption_key_status()
    assert before["data"]["term"] == before["term"] >= 1
    assert before["data"]["install_time"]

    assert root.sys.rotate_encryption_key().status_code == 204

    after = root.sys.get_encryption_key_status()["data"]
    assert after["term"] == before["data"]["term"] + 1
    read = root.secrets.kv.v2.read_secret_version(
        path="hvac-rotate/s", raise_on_deleted_version=True
    )
    assert read["data"]["data"] == {"k": "v"}  # written under the old key, still readable


def test_generate_root(root: hvac.Client, connect: Connect, server: DevServer) -> None:
    progress = root.sys.read_root_generation_progress()
    assert (progress["started"], progress["required"]) == (False, 1)
    assert progress["otp_length"] == TOKEN_LENGTH
    otp = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(TOKEN_LENGTH))

    started = root.sys.start_root_token_generation(otp=otp)
    assert started["started"] is True and started["nonce"]
    with pytest.raises(hvac.exceptions.InvalidRequest):
        root.sys.start_root_token_generation(otp=otp)  # one attempt at a time
    done = root.sys.generate_root(key=server.unseal_key, nonce=started["nonce"])

    assert done["complete"] is True
    encoded = done["encoded_token"]
    assert encoded and done["encoded_root_token"] == encoded
    mixed = base64.b64decode(encoded + "=" * (-len(encoded) % 4))
    new_root = bytes(a ^ b for a, b in zip(mixed, otp.encode(), strict=True)).decode()
    minted = connect(token=new_root)
    assert minted.auth.token.lookup_self()["data"]["policies"] == ["root"]

    # start and cancel
    assert root.sys.start_root_token_generation(otp=otp)["started"] is True
    assert root.sys.cancel_root_generation().status_code == 204
    assert root.sys.read_root_generation_progress()["started"] is False
    with pytest.raises(hvac.exceptions.InvalidRequest):
        root.sys.start_root_token_generation(otp="too-short")


def test_seal_and_unseal(root: hvac.Client, connect: Connect, server: DevServer) -> None:
    root.secrets.kv.v2.create_or_update_secret(path="hvac-seal/s", secret={"k": "v"})

    assert root.sys.seal().status_code == 204
    try:
        assert root.sys.is_sealed() is True
        health = root.sys.read_health_status(method="GET")
        assert health.status_code == 503 and health.json()["sealed"] is True
        with pytest.raises(hvac.exceptions.VaultDown):
            root.secrets.kv.v2.read_secret_version(
                path="hvac-seal/s", raise_on_deleted_version=True
            )
    finally:
        status = connect(token="").sys.submit_unseal_key(server.unseal_key)
    assert status["sealed"] is False
    assert root.sys.is_sealed() is False
    read = root.secrets.kv.v2.read_secret_version(path="hvac-seal/s", raise_on_deleted_version=True)
    assert read["data"]["data"] == {"k": "v"}
    with pytest.raises(hvac.exceptions.InvalidRequest):
        root.sys.submit_unseal_key(reset=True)  # nothing to reset once unsealed


# -- errors and raw HTTP -------------------------------------------------------------


def test_status_codes_map_to_hvac_exceptions(root: hvac.Client, connect: Connect) -> None:
    with pytest.raises(hvac.exceptions.InvalidPath) as missing:
        root.secrets.kv.v2.read_secret_version(path="hvac-none/x", raise_on_deleted_version=True)
    assert missing.value.errors == []
    with pytest.raises(hvac.exceptions.InvalidPath) as unmounted:
        root.secrets.kv.v1.read_secret(path="x", mount_point="hvac-not-mounted")
    assert "no handler for route" in unmounted.value.errors[0]
    with pytest.raises(hvac.exceptions.InvalidRequest) as bad_type:
        root.sys.enable_secrets_engine("no-such-engine", path="hvac-bad")
    assert "plugin not found" in bad_type.value.errors[0]
    with pytest.raises(hvac.exceptions.Forbidden) as no_token:
        connect(token="").sys.list_policies()
    assert no_token.value.errors == ["permission denied"]
    with pytest.raises(hvac.exceptions.UnexpectedError) as wrong_verb:  # 405
        root.adapter.delete("/v1/sys/key-status")
    assert "unsupported operation" in wrong_verb.value.errors[0]
    # hvac's legacy read() turns a 404 into None
    assert root.read("secret/data/hvac-none/x") is None


def test_raw_responses_and_the_list_verb(connect: Connect, server: DevServer) -> None:
    raw = connect(adapter=hvac.adapters.RawAdapter)
    raw.secrets.kv.v2.create_or_update_secret(path="hvac-raw/a", secret={"x": "1"})

    responses = {
        "read": raw.adapter.get("/v1/secret/data/hvac-raw/a"),
        "204": raw.sys.rotate_encryption_key(),
        "404": raw.adapter.get("/v1/secret/data/hvac-raw/none", raise_exception=False),
        "403": connect(token="x", adapter=hvac.adapters.RawAdapter).adapter.get(
            "/v1/sys/mounts", raise_exception=False
        ),
        "health": raw.sys.read_health_status(method="HEAD"),
        "seal-status": raw.sys.read_seal_status(),
    }
    assert [r.status_code for r in responses.values()] == [200, 204, 404, 403, 200, 200]
    for name, response in responses.items():
        assert response.headers.get("Cache-Control") == "no-store", name
        assert response.headers.get("X-Request-Id"), name
        if response.status_code not in (204,) and name != "health":
            # hvac parses errors only when the type is exactly application/json
            assert response.headers["Content-Type"] == "application/json", name
    assert responses["204"].content == b""

    before = len(server.logged_requests())
    listed = raw.secrets.kv.v2.list_secrets(path="hvac-raw")
    assert listed.status_code == 200 and listed.json()["data"]["keys"] == ["a"]
    assert listed.headers["Cache-Control"] == "no-store"
    assert server.methods_for("/v1/secret/metadata/hvac-raw", since=before) == ["LIST"]

    # strict_http=True sends GET ?list=true instead of the LIST verb
    strict = connect(strict_http=True)
    before = len(server.logged_requests())
    assert strict.secrets.kv.v2.list_secrets(path="hvac-raw")["data"]["keys"] == ["a"]
    assert server.methods_for("/v1/secret/metadata/hvac-raw", since=before) == ["GET"]
    assert strict.sys.list_acl_policies()["data"]["keys"]


def test_form_encoded_and_mislabelled_bodies(root: hvac.Client) -> None:
    """Bodies as ``requests`` sends them for ``data=``: a form, or JSON text labelled a form."""
    rules = 'path "secret/data/hvac-form/*" { capabilities = ["read"] }'

    as_form = root.adapter.put("/v1/sys/policies/acl/hvac-form", data={"policy": rules})
    assert as_form.status_code == 204
    assert root.sys.read_acl_policy(name="hvac-form")["data"]["policy"] == rules

    # curl -d '{...}' labels JSON as a form; JSON wins when the body starts like JSON
    mislabelled = root.adapter.post(
        "/v1/secret/data/hvac-form/a",
        data=json.dumps({"data": {"k": "v"}}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert mislabelled["data"]["version"] == 1
    # JSON with no Content-Type, or a wrong one, is still JSON
    for version, headers in ((2, {}), (3, {"Content-Type": "text/plain"})):
        written = root.adapter.post(
            "/v1/secret/data/hvac-form/a", data=json.dumps({"data": {"k": "v"}}), headers=headers
        )
        assert written["data"]["version"] == version
    # form fields are strings; a repeated field is comma-joined (a comma list)
    token = root.adapter.post(
        "/v1/auth/token/create",
        data=[("policies", "default"), ("policies", "hvac-form"), ("ttl", "10m")],
    )["auth"]
    assert token["policies"] == ["default", "hvac-form"]
    assert token["lease_duration"] == 600
    with pytest.raises(hvac.exceptions.InvalidRequest):
        root.adapter.post(
            "/v1/secret/data/hvac-form/b",
            data="data=%zz",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    root.sys.delete_acl_policy(name="hvac-form")


def test_repeated_query_parameter_is_a_list(root: hvac.Client) -> None:
    """``?version=1&version=2`` is two values, not the last one: an int field refuses it."""
    root.secrets.kv.v2.create_or_update_secret(path="hvac-query/a", secret={"k": "1"})
    root.secrets.kv.v2.create_or_update_secret(path="hvac-query/a", secret={"k": "2"})

    one = root.adapter.get("/v1/secret/data/hvac-query/a", params={"version": "1"})
    assert one["data"]["data"] == {"k": "1"}
    with pytest.raises(hvac.exceptions.InvalidRequest):
        root.adapter.get(
            "/v1/secret/data/hvac-query/a", params=[("version", "1"), ("version", "2")]
        )
