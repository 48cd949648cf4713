"""``coffer token|login|unwrap`` and ``-wrap-ttl`` against the recording fake server."""

from __future__ import annotations

import io
import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.fakes import FakeServer, Terminal, run, serving

AUTH: dict[str, Any] = {
    "request_id": "r-1",
    "lease_id": "",
    "renewable": False,
    "lease_duration": 0,
    "data": None,
    "wrap_info": None,
    "warnings": None,
    "auth": {
        "client_token": "hvs.child",
        "accessor": "acc-1",
        "policies": ["app", "default"],
        "token_policies": ["app", "default"],
        "identity_policies": [],
        "metadata": {"team": "a"},
        "lease_duration": 3600,
        "renewable": True,
    },
}
LOOKUP: dict[str, Any] = {
    "request_id": "r-2",
    "data": {
        "accessor": "acc-1",
        "creation_time": 1700000000,
        "creation_ttl": 3600,
        "display_name": "token",
        "entity_id": "",
        "expire_time": "2024-01-01T01:00:00Z",
        "explicit_max_ttl": 0,
        "id": "hvs.child",
        "meta": None,
        "num_uses": 0,
        "orphan": False,
        "path": "auth/token/create",
        "policies": ["app", "default"],
        "renewable": True,
        "ttl": 3599,
        "type": "service",
    },
}
WRAP_INFO = {
    "token": "hvs.wrapping",
    "accessor": "wacc",
    "ttl": 120,
    "creation_time": "2024-01-01T00:00:00Z",
    "creation_path": "auth/token/create",
    "wrapped_accessor": "acc-1",
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, tmp_path, token="root-token") as fake:
        yield fake


# --- token create --------------------------------------------------------------------------------


def test_create_with_every_flag(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/auth/token/create", AUTH)
    code, out, err = run(
        capsys,
        "token",
        "create",
        "-policy=app",
        "-policy=ops,audit",
        "-ttl=1h",
        "-explicit-max-ttl=24h",
        "-period=30m",
        "-use-limit=5",
        "-orphan",
        "-no-default-policy",
        "-renewable=false",
        "-display-name=ci",
        "-metadata=team=a",
        "-metadata=env=prod",
        "-type=service",
        "-id=custom",
    )
    assert (code, err) == (0, "")
    seen = server.only()
    assert seen.headers["x-service-token"] == "root-token"
    assert seen.body == {
        "id": "custom",
        "policies": ["app", "ops", "audit"],
        "meta": {"team": "a", "env": "prod"},
        "no_parent": True,
        "no_default_policy": True,
        "ttl": "1h",
        "explicit_max_ttl": "24h",
        "period": "30m",
        "display_name": "ci",
        "type": "service",
        "num_uses": 5,
        "renewable": False,
    }
    assert out.splitlines() == [
        "Key                  Value",
        "---                  -----",
        "token                hvs.child",
        "token_accessor       acc-1",
        "token_duration       1h",
        "token_renewable      true",
        "token_policies       [app default]",
        "identity_policies    []",
        "policies             [app default]",
        "token_meta_team      a",
    ]


def test_create_defaults_role_and_field(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("POST", "/v1/auth/token/create", AUTH)
    server.on("POST", "/v1/auth/token/create/ci-role", AUTH)
    assert run(capsys, "token", "create", "-field=token") == (0, "hvs.child\n", "")
    assert server.last().body == {"renewable": True}
    assert run(capsys, "token", "create", "-role=ci-role", "-field=policies")[1] == (
        "[app default]\n"
    )
    assert server.last().path == "/v1/auth/token/create/ci-role"
    out = run(capsys, "token", "create", "-format=json", "-field=policies")[1]
    assert json.loads(out) == ["app", "default"]
    assert json.loads(run(capsys, "token", "create", "-format=json")[1]) == AUTH


def test_create_warnings_and_errors(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/auth/token/create", {**AUTH, "warnings": ['Policy "x" does not exist']})
    code, _, err = run(capsys, "token", "create", "-policy=x")
    assert code == 0
    assert '* Policy "x" does not exist' in err
    server.on("POST", "/v1/auth/token/create", {"errors": ["permission denied"]}, status=403)
    code, out, err = run(capsys, "token", "create")
    assert (code, out) == (2, "")
    assert err.startswith("Error creating token: Error making API request.")
    code, _, err = run(capsys, "token", "create", "-ttl=soon")
    assert code == 2
    assert "invalid duration" in err


# --- lookup / renew / revoke / capabilities ------------------------------------------------------


def test_lookup_self_other_and_accessor(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", "/v1/auth/token/lookup-self", LOOKUP)
    server.on("POST", "/v1/auth/token/lookup", LOOKUP)
    server.on("POST", "/v1/auth/token/lookup-accessor", LOOKUP)
    code, out, _ = run(capsys, "token", "lookup")
    assert code == 0
    assert server.last().method == "GET"
    rows = dict(line.split(None, 1) for line in out.splitlines()[2:])
    assert rows["creation_ttl"] == "1h"  # TTL-like numbers print as durations
    assert rows["ttl"] == "59m59s"
    assert rows["explicit_max_ttl"] == "0s"
    assert rows["meta"] == "<nil>"
    assert rows["policies"] == "[app default]"
    assert rows["entity_id"] == "n/a"

    assert run(capsys, "token", "lookup", "hvs.other")[0] == 0
    seen = server.last()
    assert (seen.path, seen.body) == ("/v1/auth/token/lookup", {"token": "hvs.other"})
    # The TOKEN argument is the subject, never the client token.
    assert seen.headers["x-service-token"] == "root-token"

    assert run(capsys, "token", "lookup", "-accessor", "acc-1", "-field=ttl")[1] == "3599\n"
    assert server.last().body == {"accessor": "acc-1"}
    code, _, err = run(capsys, "token", "lookup", "-accessor")
    assert code == 2
    assert "ACCESSOR" in err


def test_renew(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/auth/token/renew-self", AUTH)
    server.on("POST", "/v1/auth/token/renew", AUTH)
    server.on("POST", "/v1/auth/token/renew-accessor", AUTH)
    code, out, _ = run(capsys, "token", "renew")
    assert (code, server.last().body) == (0, {})
    assert "token_duration       1h" in out
    run(capsys, "token", "renew", "-increment=1h30m", "hvs.other")
    assert server.last().body == {"increment": 5400, "token": "hvs.other"}
    assert server.last().headers["x-service-token"] == "root-token"
    run(capsys, "token", "renew", "-accessor", "-increment=90", "acc-1")
    assert (server.last().path, server.last().body) == (
        "/v1/auth/token/renew-accessor",
        {"increment": 90, "accessor": "acc-1"},
    )


@pytest.mark.parametrize(
    ("argv", "path", "body"),
    [
        (["hvs.other"], "/v1/auth/token/revoke", {"token": "hvs.other"}),
        (["-self"], "/v1/auth/token/revoke-self", {}),
        (["-accessor", "acc-1"], "/v1/auth/token/revoke-accessor", {"accessor": "acc-1"}),
        (["-mode=orphan", "hvs.other"], "/v1/auth/token/revoke-orphan", {"token": "hvs.other"}),
        (["-mode=path", "auth/token/create"], "/v1/sys/leases/revoke-prefix/auth/token/create", {}),
    ],
)
def test_revoke(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    path: str,
    body: dict[str, str],
) -> None:
    server.on("POST", path, None, status=204)
    assert run(capsys, "token", "revoke", *argv) == (
        0,
        "Success! Revoked token (if it existed)\n",
        "",
    )
    seen = server.only()
    assert (seen.path, seen.body, seen.headers["x-service-token"]) == (path, body, "root-token")


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["-self", "hvs.other"],
        ["-self", "-accessor"],
        ["-accessor", "-mode=orphan", "acc"],
        ["-mode=bogus", "hvs.other"],
    ],
)
def test_revoke_usage_errors(
    server: FakeServer, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert run(capsys, "token", "revoke", *argv)[0] == 2
    assert server.requests == []


def test_capabilities(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    answer = {"secret/data/app": ["update", "read"], "capabilities": ["update", "read"]}
    server.on("POST", "/v1/sys/capabilities-self", {**answer, "data": answer})
    server.on("POST", "/v1/sys/capabilities", {"data": {"capabilities": ["deny"]}})
    server.on("POST", "/v1/sys/capabilities-accessor", {"data": answer})
    assert run(capsys, "token", "capabilities", "/secret/data/app") == (0, "read, update\n", "")
    assert server.last().body == {"paths": ["secret/data/app"]}
    assert run(capsys, "token", "capabilities", "hvs.other", "secret/data/app")[1] == "deny\n"
    assert server.last().body == {"paths": ["secret/data/app"], "token": "hvs.other"}
    assert server.last().headers["x-service-token"] == "root-token"
    out = run(capsys, "token", "capabilities", "-accessor", "-format=json", "a", "secret/data/app")
    assert json.loads(out[1]) == ["read", "update"]
    assert server.last().body == {"paths": ["secret/data/app"], "accessor": "a"}


# --- login ---------------------------------------------------------------------------------------


def test_login_stores_the_token(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("COFFER_TOKEN")
    server.on("GET", "/v1/auth/token/lookup-self", LOOKUP)
    code, out, err = run(capsys, "login", "hvs.child")
    assert (code, err) == (0, "")
    seen = server.only()
    assert seen.headers["x-service-token"] == "hvs.child"
    token_file = tmp_path / ".coffer-token"
    assert token_file.read_text() == "hvs.child"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert out.startswith("Success! You are now authenticated.")
    assert "token                hvs.child" in out
    assert "token_duration       59m59s" in out
    assert "policies             [app default]" in out
    # Later commands use the stored token.
    server.on("GET", "/v1/auth/token/lookup-self", LOOKUP)
    run(capsys, "token", "lookup")
    assert server.last().headers["x-service-token"] == "hvs.child"


def test_login_prompts_and_warns_about_the_env_token(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    prompts: list[str] = []

    def fake_getpass(prompt: str = "", stream: object = None) -> str:
        prompts.append(prompt)
        return "hvs.child\n"

    monkeypatch.setattr("getpass.getpass", fake_getpass)
    monkeypatch.setattr("sys.stdin", Terminal())
    server.on("GET", "/v1/auth/token/lookup-self", LOOKUP)
    code, _, err = run(capsys, "login")
    assert code == 0
    assert prompts == ["Token (will be hidden): "]
    assert server.only().headers["x-service-token"] == "hvs.child"
    assert "COFFER_TOKEN environment variable is set" in err
    assert (tmp_path / ".coffer-token").read_text() == "hvs.child"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [(["-no-store"], None), (["-token-only"], "hvs.child\n"), (["-no-print"], "")],
)
def test_login_variants(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    flags: list[str],
    expected: str | None,
) -> None:
    monkeypatch.delenv("COFFER_TOKEN")
    monkeypatch.setattr("sys.stdin", io.StringIO("hvs.child\n"))
    server.on("GET", "/v1/auth/token/lookup-self", LOOKUP)
    code, out, _ = run(capsys, "login", *flags, "-")
    assert code == 0
    if expected is not None:
        assert out == expected
    stored = (tmp_path / ".coffer-token").exists()
    assert stored is (flags == ["-no-print"])


def test_login_json_and_field(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COFFER_TOKEN")
    server.on("GET", "/v1/auth/token/lookup-self", LOOKUP)
    doc = json.loads(run(capsys, "login", "-format=json", "hvs.child")[1])
    assert doc["auth"]["client_token"] == "hvs.child"
    assert doc["auth"]["lease_duration"] == 3599
    assert run(capsys, "login", "-field=token_accessor", "hvs.child")[1] == "acc-1\n"


def test_login_with_a_bad_token(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("COFFER_TOKEN")
    server.on("GET", "/v1/auth/token/lookup-self", {"errors": ["permission denied"]}, 403)
    code, out, err = run(capsys, "login", "hvs.wrong")
    assert (code, out) == (2, "")
    assert err.startswith("Error authenticating: error looking up token: Error making API")
    assert "hvs.wrong" not in err
    assert not (tmp_path / ".coffer-token").exists()
    code, _, err = run(capsys, "login", "-method=userpass", "x")
    assert code == 2
    assert "invalid key/value pair 'x'" in err


# --- wrapping ------------------------------------------------------------------------------------


def test_wrap_ttl_header_and_wrapped_output(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    wrapped = {**AUTH, "auth": None, "wrap_info": WRAP_INFO}
    server.on("POST", "/v1/auth/token/create", wrapped)
    code, out, _ = run(capsys, "token", "create", "-wrap-ttl=2m", "-policy=app")
    assert code == 0
    assert server.only().headers["x-service-wrap-ttl"] == "2m"
    assert out.splitlines() == [
        "Key                              Value",
        "---                              -----",
        "wrapping_token:                  hvs.wrapping",
        "wrapping_accessor:               wacc",
        "wrapping_token_ttl:              2m",
        "wrapping_token_creation_time:    2024-01-01T00:00:00Z",
        "wrapping_token_creation_path:    auth/token/create",
        "wrapped_accessor:                acc-1",
    ]
    out = run(capsys, "token", "create", "-wrap-ttl=2m", "-field=wrapping_token")[1]
    assert out == "hvs.wrapping\n"
    assert json.loads(run(capsys, "token", "create", "-wrap-ttl=2m", "-format=json")[1]) == wrapped


def test_wrap_ttl_from_the_environment_and_generic_commands(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_WRAP_TTL", "90s")
    server.on("GET", "/v1/secret/data/app?version=2", {"data": None, "wrap_info": WRAP_INFO})
    code, out, _ = run(capsys, "read", "secret/data/app", "version=2")
    assert code == 0
    assert server.only().headers["x-service-wrap-ttl"] == "90s"
    assert "wrapping_token:                  hvs.wrapping" in out
    monkeypatch.setenv("VAULT_WRAP_TTL", "0")  # zero: do not wrap
    server.on("GET", "/v1/secret/data/app?version=2", {"data": {"k": "v"}})
    assert run(capsys, "read", "secret/data/app", "version=2")[0] == 0
    assert "x-service-wrap-ttl" not in server.last().headers
    monkeypatch.setenv("VAULT_WRAP_TTL", "later")
    code, _, err = run(capsys, "read", "secret/data/app")
    assert (code, err) == (
        1,
        "Error: invalid VAULT_WRAP_TTL='later': expected a duration such as 5m\n",
    )


def test_bad_wrap_ttl_flag_is_a_usage_error(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "read", "-wrap-ttl=never", "secret/x")
    assert code == 2
    assert "invalid duration 'never'" in err
    assert server.requests == []


# --- unwrap --------------------------------------------------------------------------------------

UNWRAPPED = {"request_id": "r-3", "data": {"data": {"a": "1"}, "metadata": {"version": 1}}}


def test_unwrap_a_token_argument(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/wrapping/unwrap", UNWRAPPED)
    code, out, _ = run(capsys, "unwrap", "hvs.wrapping")
    assert code == 0
    seen = server.only()
    assert (seen.body, seen.headers["x-service-token"]) == ({"token": "hvs.wrapping"}, "root-token")
    assert out.splitlines() == [
        "Key         Value",
        "---         -----",
        "data        map[a:1]",
        "metadata    map[version:1]",
    ]
    assert json.loads(run(capsys, "unwrap", "-format=json", "hvs.wrapping")[1]) == UNWRAPPED
    assert run(capsys, "unwrap", "-field=data", "hvs.wrapping")[1] == "map[a:1]\n"


def test_unwrap_with_the_client_token(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server.on("PUT", "/v1/sys/wrapping/unwrap", UNWRAPPED)
    monkeypatch.setenv("COFFER_TOKEN", "hvs.wrapping")
    assert run(capsys, "unwrap")[0] == 0
    assert run(capsys, "unwrap", "hvs.wrapping")[0] == 0  # same token: no body either
    monkeypatch.delenv("COFFER_TOKEN")
    assert run(capsys, "unwrap", "hvs.wrapping")[0] == 0  # no client token: it authenticates
    for seen in server.requests:
        assert (seen.body, seen.headers["x-service-token"]) == (None, "hvs.wrapping")


def test_unwrap_lists_and_failures(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/wrapping/unwrap", {"data": {"keys": ["a", "b"]}})
    assert run(capsys, "unwrap", "hvs.w") == (0, "Keys\n----\na\nb\n", "")
    server.on("PUT", "/v1/sys/wrapping/unwrap", None, status=204)
    assert run(capsys, "unwrap", "hvs.w") == (2, "", "Could not find wrapped response\n")
    server.on("PUT", "/v1/sys/wrapping/unwrap", {"errors": ["wrapping token is not valid"]}, 400)
    code, _, err = run(capsys, "unwrap", "hvs.w")
    assert code == 2
    assert err.startswith("Error unwrapping: Error making API request.")
