"""The real ``coffer`` CLI against a real ``coffer server -dev`` subprocess.

One dev server (root token ``root``) serves the module; every CLI run is a
separate ``coffer`` process with ``COFFER_ADDR``/``COFFER_TOKEN`` set and
``HOME`` pointing at the test's own directory, so ``~/.coffer-token`` never
touches the real home. Tests use distinct paths and names, so their order
does not matter.

Server features that are still being built (KV v2 PATCH and metadata writes)
are detected by the server's "unsupported operation" (405) answer; only the
test that needs one is then marked xfail, with the reason.
"""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.process import coffer_command
from harness.server import ServerProcess
from harness.server import dev_server as module_dev_server
from tests.integration.conftest import no_proxy_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = "root"
CLI_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with module_dev_server(tmp_path_factory.mktemp("cli-e2e-server"), ROOT) as server:
        yield server


@dataclass
class Result:
    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def __str__(self) -> str:
        return (
            f"coffer {' '.join(self.args)} -> {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}"
        )


class Cli:
    """Runs ``coffer`` against the dev server with an isolated HOME."""

    def __init__(self, server: ServerProcess, home: Path) -> None:
        self.server = server
        self.home = home

    def __call__(self, *args: str, token: str | None = ROOT, stdin: str | None = None) -> Result:
        env = {**no_proxy_env(), "COFFER_ADDR": self.server.base_url, "HOME": str(self.home)}
        if token is not None:
            env["COFFER_TOKEN"] = token
        proc = subprocess.run(
            [*coffer_command(), *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            env=env,
            timeout=CLI_TIMEOUT,
            check=False,
        )
        return Result(args, proc.returncode, proc.stdout, proc.stderr)

    def ok(self, *args: str, token: str | None = ROOT, stdin: str | None = None) -> Result:
        result = self(*args, token=token, stdin=stdin)
        assert result.code == 0, f"{result}\nserver log:\n{self.server.stderr_text()[-3000:]}"
        return result

    def fails(self, code: int, *args: str, token: str | None = ROOT) -> Result:
        result = self(*args, token=token)
        assert result.code == code, str(result)
        return result


@pytest.fixture
def cli(dev: ServerProcess, tmp_path: Path) -> Cli:
    home = tmp_path / "home"
    home.mkdir()
    return Cli(dev, home)


# --- status and generic commands ---------------------------------------------------------------


def test_status_and_generic_commands(cli: Cli) -> None:
    status = cli.ok("status")
    assert any(line.split() == ["Sealed", "false"] for line in status.out.splitlines())
    assert cli.ok("status", "-format=json").json()["sealed"] is False

    written = cli.ok("write", "cubbyhole/e2e", "a=1", "tags=x", "tags=y")
    assert written.out == "Success! Data written to: cubbyhole/e2e\n"
    assert cli.ok("read", "-field=a", "cubbyhole/e2e").out == "1\n"
    envelope = cli.ok("read", "-format=json", "cubbyhole/e2e").json()
    assert envelope["data"] == {"a": "1", "tags": ["x", "y"]}
    assert cli.ok("list", "-format=json", "cubbyhole").json() == ["e2e"]
    cli.ok("delete", "cubbyhole/e2e")
    missing = cli.fails(2, "read", "cubbyhole/e2e")
    assert missing.err == "No value found at cubbyhole/e2e\n"


# --- kv -----------------------------------------------------------------------------------------


def test_kv_v2_lifecycle(cli: Cli) -> None:
    put = cli.ok("kv", "put", "secret/e2e/app", "user=admin", "pass=one")
    assert put.out.startswith("=== Secret Path ===\nsecret/data/e2e/app\n")
    assert "version            1" in put.out
    cli.ok("kv", "put", "-cas=1", "secret/e2e/app", "user=admin", "pass=two")
    conflict = cli.fails(2, "kv", "put", "-cas=1", "secret/e2e/app", "pass=three")
    assert "check-and-set" in conflict.err

    got = cli.ok("kv", "get", "secret/e2e/app")
    assert "Secret Path" in got.out and "Metadata" in got.out and "Data" in got.out
    assert any(line.split() == ["pass", "two"] for line in got.out.splitlines())
    assert cli.ok("kv", "get", "-field=pass", "secret/e2e/app").out == "two\n"
    assert cli.ok("kv", "get", "-version=1", "-field=pass", "secret/e2e/app").out == "one\n"
    assert cli.ok("kv", "get", "-mount=secret", "-field=pass", "e2e/app").out == "two\n"
    envelope = cli.ok("kv", "get", "-format=json", "secret/e2e/app").json()
    assert envelope["data"]["data"] == {"user": "admin", "pass": "two"}
    assert envelope["data"]["metadata"]["version"] == 2

    rw = cli.ok("kv", "patch", "-method=rw", "secret/e2e/app", "extra=1")
    assert "version            3" in rw.out
    assert cli.ok("kv", "get", "-format=json", "secret/e2e/app").json()["data"]["data"] == {
        "user": "admin",
        "pass": "two",
        "extra": "1",
    }

    assert cli.ok("kv", "list", "secret/e2e").out == "Keys\n----\napp\n"
    assert cli.ok("kv", "list", "-format=json", "secret/e2e").json() == ["app"]

    deleted = cli.ok("kv", "delete", "secret/e2e/app")
    assert deleted.out == "Success! Data deleted (if it existed) at: secret/data/e2e/app\n"
    after = cli.ok("kv", "get", "secret/e2e/app")  # the metadata of a deleted version
    assert "Data" not in after.out
    assert "deletion_time      n/a" not in after.out
    cli.fails(2, "kv", "get", "-field=pass", "secret/e2e/app")

    undeleted = cli.ok("kv", "undelete", "-versions=3", "secret/e2e/app")
    assert undeleted.out == "Success! Data written to: secret/undelete/e2e/app\n"
    assert cli.ok("kv", "get", "-field=extra", "secret/e2e/app").out == "1\n"

    cli.ok("kv", "delete", "-versions=2", "secret/e2e/app")
    cli.fails(2, "kv", "get", "-version=2", "-field=pass", "secret/e2e/app")
    cli.ok("kv", "destroy", "-versions=1", "secret/e2e/app")
    destroyed = cli.ok("kv", "get", "-version=1", "-format=json", "secret/e2e/app").json()
    assert destroyed["data"]["metadata"]["destroyed"] is True

    meta = cli.ok("kv", "metadata", "get", "secret/e2e/app")
    assert meta.out.startswith("==== Metadata Path ====\nsecret/metadata/e2e/app\n")
    for number in (1, 2, 3):
        assert f"Version {number} =" in meta.out
    meta_json = cli.ok("kv", "metadata", "get", "-format=json", "secret/e2e/app").json()
    assert meta_json["data"]["current_version"] == 3
    assert meta_json["data"]["versions"]["1"]["destroyed"] is True

    gone = cli.ok("kv", "metadata", "delete", "secret/e2e/app")
    assert gone.out == "Success! Data deleted (if it existed) at: secret/metadata/e2e/app\n"
    missing = cli.fails(2, "kv", "get", "secret/e2e/app")
    assert missing.err == "No value found at secret/data/e2e/app\n"
    assert cli.fails(2, "kv", "list", "secret/e2e").err == "No value found at secret/metadata/e2e\n"


def test_kv_patch(cli: Cli) -> None:
    cli.ok("kv", "put", "secret/e2e-patch/patched", "a=1", "b=2")
    cli.ok("kv", "patch", "secret/e2e-patch/patched", "b=3", "c=4")
    data = cli.ok("kv", "get", "-format=json", "secret/e2e-patch/patched").json()["data"]["data"]
    assert data == {"a": "1", "b": "3", "c": "4"}
    cli.ok("kv", "patch", "-remove-data=a", "secret/e2e-patch/patched", "d=5")
    data = cli.ok("kv", "get", "-format=json", "secret/e2e-patch/patched").json()["data"]["data"]
    assert data == {"b": "3", "c": "4", "d": "5"}


def test_kv_metadata_put(cli: Cli) -> None:
    cli.ok("kv", "put", "secret/e2e-meta/meta", "a=1")
    result = cli.ok(
        "kv",
        "metadata",
        "put",
        "-max-versions=4",
        "-custom-metadata=owner=ops",
        "secret/e2e-meta/meta",
    )
    assert result.out == "Success! Data written to: secret/metadata/e2e-meta/meta\n"
    meta = cli.ok("kv", "metadata", "get", "-format=json", "secret/e2e-meta/meta").json()["data"]
    assert meta["max_versions"] == 4
    assert meta["custom_metadata"] == {"owner": "ops"}


def test_kv_v1_mount(cli: Cli) -> None:
    cli.ok("secrets", "enable", "-path=e2e-v1", "kv")
    assert cli.ok("kv", "put", "e2e-v1/app", "a=1").out == "Success! Data written to: e2e-v1/app\n"
    assert cli.ok("kv", "get", "-field=a", "e2e-v1/app").out == "1\n"
    assert cli.ok("kv", "list", "-format=json", "e2e-v1").json() == ["app"]
    assert "not supported on KV version 1" in cli.fails(2, "kv", "patch", "e2e-v1/app", "a=2").err
    cli.ok("kv", "delete", "e2e-v1/app")
    cli.fails(2, "kv", "get", "e2e-v1/app")
    cli.ok("secrets", "disable", "e2e-v1")


# --- secrets and auth -------------------------------------------------------------------------


def test_secrets_lifecycle(cli: Cli) -> None:
    enabled = cli.ok("secrets", "enable", "-path=e2e-kv", "-version=2", "-description=E2E", "kv")
    assert enabled.out == "Success! Enabled the kv secrets engine at: e2e-kv/\n"
    listing = cli.ok("secrets", "list")
    assert listing.out.splitlines()[0].split() == ["Path", "Type", "Accessor", "Description"]
    row = next(line.split() for line in listing.out.splitlines() if line.startswith("e2e-kv/"))
    assert (row[1], row[3]) == ("kv", "E2E")
    mounts = cli.ok("secrets", "list", "-format=json").json()
    assert mounts["e2e-kv/"]["options"] == {"version": "2"}
    assert {"secret/", "sys/", "cubbyhole/"} <= set(mounts)
    assert "map[version:2]" in cli.ok("secrets", "list", "-detailed").out

    tuned = cli.ok("secrets", "tune", "-default-lease-ttl=1h", "-max-lease-ttl=2h", "e2e-kv")
    assert tuned.out == "Success! Tuned the secrets engine at: e2e-kv/\n"
    tune = cli.ok("read", "-format=json", "sys/mounts/e2e-kv/tune").json()
    assert (tune["data"]["default_lease_ttl"], tune["data"]["max_lease_ttl"]) == (3600, 7200)

    cli.ok("kv", "put", "e2e-kv/app", "k=v")
    moved = cli.ok("secrets", "move", "e2e-kv", "e2e-moved")
    assert moved.out.startswith("Success! Finished moving secrets engine e2e-kv/ to e2e-moved/")
    mounts = cli.ok("secrets", "list", "-format=json").json()
    assert "e2e-moved/" in mounts and "e2e-kv/" not in mounts
    assert cli.ok("kv", "get", "-field=k", "e2e-moved/app").out == "v\n"

    disabled = cli.ok("secrets", "disable", "e2e-moved")
    assert disabled.out == "Success! Disabled the secrets engine (if it existed) at: e2e-moved/\n"
    assert "e2e-moved/" not in cli.ok("secrets", "list", "-format=json").json()
    cli.fails(2, "secrets", "tune", "-max-lease-ttl=1h", "e2e-moved")


def test_auth_list(cli: Cli) -> None:
    methods = cli.ok("auth", "list", "-format=json").json()
    assert methods["token/"]["type"] == "token"
    assert any(line.startswith("token/") for line in cli.ok("auth", "list").out.splitlines())


# --- policies and tokens -----------------------------------------------------------------------

MESSY_POLICY = """\
# e2e reader
path "secret/data/e2e-acl/allowed" { capabilities=["read"] }
path "secret/metadata/e2e-acl/*" {
capabilities = [ "list" ]
}
"""


def test_policy_lifecycle(cli: Cli) -> None:
    policy_file = cli.home / "reader.hcl"
    policy_file.write_text(MESSY_POLICY)
    formatted = cli.ok("policy", "fmt", str(policy_file))
    assert formatted.out == f"Success! Formatted policy: {policy_file}\n"
    assert policy_file.read_text() == (
        "# e2e reader\n"
        'path "secret/data/e2e-acl/allowed" {\n  capabilities = ["read"]\n}\n\n'
        'path "secret/metadata/e2e-acl/*" {\n  capabilities = ["list"]\n}\n'
    )

    assert cli.ok("policy", "write", "E2E-Policy", str(policy_file)).out == (
        "Success! Uploaded policy: e2e-policy\n"
    )
    assert cli.ok("policy", "read", "e2e-policy").out == policy_file.read_text()
    assert cli.ok("policy", "read", "-format=json", "e2e-policy").json() == {
        "policy": policy_file.read_text()
    }
    assert "e2e-policy" in cli.ok("policy", "list").out.splitlines()
    assert {"default", "root", "e2e-policy"} <= set(cli.ok("policy", "list", "-format=json").json())
    cli.ok("policy", "write", "e2e-stdin", "-", stdin='path "x" { capabilities = ["read"] }')
    assert cli.ok("policy", "read", "e2e-stdin").out == 'path "x" { capabilities = ["read"] }\n'

    assert cli.ok("policy", "delete", "e2e-policy").out == "Success! Deleted policy: e2e-policy\n"
    cli.ok("policy", "delete", "e2e-stdin")
    assert cli.fails(2, "policy", "read", "e2e-policy").err == "No policy named: e2e-policy\n"


def test_token_with_a_policy(cli: Cli) -> None:
    policy_file = cli.home / "acl.hcl"
    policy_file.write_text(MESSY_POLICY)
    cli.ok("policy", "write", "e2e-acl", str(policy_file))
    cli.ok("kv", "put", "secret/e2e-acl/allowed", "value=yes")
    cli.ok("kv", "put", "secret/e2e-acl/denied", "value=no")

    created = cli.ok("token", "create", "-policy=e2e-acl", "-ttl=1h", "-format=json").json()
    child = created["auth"]["client_token"]
    accessor = created["auth"]["accessor"]
    assert created["auth"]["policies"] == ["default", "e2e-acl"]

    allowed = cli.ok("kv", "get", "-field=value", "secret/e2e-acl/allowed", token=child)
    assert allowed.out == "yes\n"
    denied = cli.fails(2, "kv", "get", "secret/e2e-acl/denied", token=child)
    assert "permission denied" in denied.err
    assert denied.err.startswith("Error reading secret/data/e2e-acl/denied")
    listed = cli.ok("kv", "list", "-format=json", "secret/e2e-acl", token=child).json()
    assert listed == ["allowed", "denied"]

    assert cli.ok("token", "capabilities", child, "secret/data/e2e-acl/allowed").out == "read\n"
    assert cli.ok("token", "capabilities", "secret/data/e2e-acl/denied", token=child).out == (
        "deny\n"
    )

    looked = cli.ok("token", "lookup", "-format=json", child).json()
    assert (looked["data"]["id"], looked["data"]["accessor"]) == (child, accessor)
    table = cli.ok("token", "lookup", child).out
    assert any(line.split() == ["policies", "[default", "e2e-acl]"] for line in table.splitlines())
    by_accessor = cli.ok("token", "lookup", "-accessor", "-format=json", accessor).json()
    assert by_accessor["data"]["accessor"] == accessor
    assert cli.ok("token", "lookup", "-field=display_name", token=child).out == "token\n"

    renewed = cli.ok("token", "renew", "-increment=30m", "-format=json", child).json()
    assert 0 < renewed["auth"]["lease_duration"] <= 1800
    cli.ok("token", "renew", token=child)

    revoked = cli.ok("token", "revoke", child)
    assert revoked.out == "Success! Revoked token (if it existed)\n"
    cli.fails(2, "token", "lookup", child)
    cli.fails(2, "kv", "get", "secret/e2e-acl/allowed", token=child)

    orphan = cli.ok("token", "create", "-orphan", "-field=token").out.strip()
    cli.ok("token", "revoke", "-self", token=orphan)
    cli.fails(2, "token", "lookup", orphan)


def test_login(cli: Cli) -> None:
    token = cli.ok("token", "create", "-ttl=1h", "-field=token").out.strip()
    token_file = cli.home / ".coffer-token"

    logged_in = cli.ok("login", token, token=None)
    assert logged_in.out.startswith("Success! You are now authenticated.")
    assert f"token                {token}" in logged_in.out
    assert token_file.read_text() == token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # No COFFER_TOKEN: later commands use the stored token.
    assert cli.ok("token", "lookup", "-format=json", token=None).json()["data"]["id"] == token

    other = cli.ok("token", "create", "-field=token").out.strip()
    cli.ok("login", "-no-store", other, token=None)
    assert token_file.read_text() == token
    cli.ok("login", token=None, stdin=other + "\n")  # piped stdin instead of the prompt
    assert token_file.read_text() == other

    bad = cli.fails(2, "login", "hvs.not-a-real-token", token=None)
    assert "Error authenticating" in bad.err
    assert token_file.read_text() == other


def test_wrap_and_unwrap(cli: Cli) -> None:
    cli.ok("kv", "put", "secret/e2e-wrap/wrapped", "secret=sauce")
    table = cli.ok("kv", "get", "-wrap-ttl=5m", "secret/e2e-wrap/wrapped").out
    assert table.splitlines()[2].startswith("wrapping_token:")
    assert "wrapping_token_creation_path:    secret/data/e2e-wrap/wrapped" in table

    wrapped = cli.ok("kv", "get", "-wrap-ttl=5m", "-format=json", "secret/e2e-wrap/wrapped").json()
    info = wrapped["wrap_info"]
    assert wrapped["data"] is None and info["ttl"] == 300
    unwrapped = cli.ok("unwrap", "-format=json", info["token"]).json()
    assert unwrapped["data"]["data"] == {"secret": "sauce"}
    again = cli.fails(2, "unwrap", info["token"])
    assert "Error unwrapping" in again.err

    # Without a TOKEN argument the client token is the wrapping token.
    wrapping = cli.ok("token", "create", "-wrap-ttl=2m", "-field=wrapping_token").out.strip()
    child = cli.ok("unwrap", "-field=token", token=wrapping).out.strip()
    assert cli.ok("token", "lookup", "-field=id", token=child).out.strip() == child

    # Any command can be wrapped, e.g. a generic read.
    listed = cli.ok("read", "-wrap-ttl=1m", "-field=wrapping_token", "sys/mounts").out.strip()
    assert "secret/" in cli.ok("unwrap", "-format=json", listed).json()["data"]
