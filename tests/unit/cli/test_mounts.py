"""``coffer secrets ...`` and ``coffer auth ...`` against the recording fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.fakes import FakeServer, run, serving


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, tmp_path, token="root-token") as fake:
        yield fake


def entry(type_: str, accessor: str, description: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "type": type_,
        "description": description,
        "accessor": accessor,
        "uuid": f"uuid-{accessor}",
        "config": {"default_lease_ttl": 0, "max_lease_ttl": 0, "force_no_cache": False},
        "options": None,
        "local": False,
        "seal_wrap": False,
        "external_entropy_access": False,
        **extra,
    }


MOUNTS = {
    "sys/": entry("system", "system_1", "system endpoints"),
    "secret/": entry("kv", "kv_2", "key/value secret storage", options={"version": "2"}),
    "cubbyhole/": entry("cubbyhole", "cubbyhole_3", "per-token private secret storage", local=True),
    "kv/": {
        **entry("kv", "kv_4"),
        "config": {"default_lease_ttl": 3600, "max_lease_ttl": 7200, "force_no_cache": True},
    },
}


# --- secrets -------------------------------------------------------------------------------------


def test_secrets_enable(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/sys/mounts/team/kv", None, status=204)
    code, out, err = run(
        capsys,
        "secrets",
        "enable",
        "-path=/team/kv/",
        "-version=2",
        "-description=Team secrets",
        "-default-lease-ttl=1h",
        "-max-lease-ttl=24h",
        "-local",
        "-seal-wrap",
        "-options=foo=bar",
        "kv",
    )
    assert (code, out, err) == (0, "Success! Enabled the kv secrets engine at: team/kv/\n", "")
    seen = server.only()
    assert seen.headers["x-service-token"] == "root-token"
    assert seen.body == {
        "type": "kv",
        "description": "Team secrets",
        "config": {"default_lease_ttl": "1h", "max_lease_ttl": "24h"},
        "options": {"foo": "bar", "version": "2"},
        "local": True,
        "seal_wrap": True,
    }


def test_secrets_enable_defaults_path_to_type(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("POST", "/v1/sys/mounts/kv-v2", None, status=204)
    code, out, _ = run(capsys, "secrets", "enable", "kv-v2")
    assert (code, out) == (0, "Success! Enabled the kv-v2 secrets engine at: kv-v2/\n")
    assert server.only().body == {
        "type": "kv-v2",
        "description": "",
        "config": {},
        "options": {},
        "local": False,
        "seal_wrap": False,
    }


def test_secrets_enable_error(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/sys/mounts/x", {"errors": ["path is already in use at x/"]}, 400)
    code, out, err = run(capsys, "secrets", "enable", "-path=x", "kv")
    assert (code, out) == (2, "")
    assert err.startswith("Error enabling: Error making API request.")
    assert "* path is already in use at x/" in err


def test_secrets_enable_rejects_bad_durations(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "secrets", "enable", "-max-lease-ttl=forever", "kv")
    assert code == 2
    assert "invalid duration 'forever'" in err
    assert server.requests == []


def test_secrets_disable(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("DELETE", "/v1/sys/mounts/team/kv", None, status=204)
    code, out, _ = run(capsys, "secrets", "disable", "team/kv/")
    assert (code, out) == (0, "Success! Disabled the secrets engine (if it existed) at: team/kv/\n")


def test_secrets_list(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/sys/mounts", {**MOUNTS, "request_id": "r", "data": MOUNTS})
    code, out, _ = run(capsys, "secrets", "list")
    assert code == 0
    assert out.splitlines() == [
        "Path          Type         Accessor       Description",
        "----          ----         --------       -----------",
        "cubbyhole/    cubbyhole    cubbyhole_3    per-token private secret storage",
        "kv/           kv           kv_4           n/a",
        "secret/       kv           kv_2           key/value secret storage",
        "sys/          system       system_1       system endpoints",
    ]
    assert json.loads(run(capsys, "secrets", "list", "-format=json")[1]) == MOUNTS


def test_secrets_list_detailed(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/sys/mounts", {"data": MOUNTS})
    code, out, _ = run(capsys, "secrets", "list", "-detailed")
    assert code == 0
    lines = out.splitlines()
    header = [cell.strip() for cell in lines[0].split("  ") if cell.strip()]
    assert header == [
        "Path",
        "Plugin",
        "Accessor",
        "Default TTL",
        "Max TTL",
        "Force No Cache",
        "Replication",
        "Seal Wrap",
        "External Entropy Access",
        "Options",
        "Description",
        "UUID",
    ]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["cubbyhole/"][3:7] == ["n/a", "n/a", "false", "local"]
    assert rows["kv/"][3:7] == ["3600", "7200", "true", "replicated"]
    assert rows["secret/"][3:5] == ["system", "system"]
    assert "map[version:2]" in rows["secret/"]
    assert "map[]" in rows["sys/"]


def test_secrets_tune(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/sys/mounts/secret/tune", None, status=204)
    code, out, _ = run(
        capsys,
        "secrets",
        "tune",
        "-default-lease-ttl=30m",
        "-max-lease-ttl=1h",
        "-description=new",
        "-listing-visibility=unauth",
        "secret/",
    )
    assert (code, out) == (0, "Success! Tuned the secrets engine at: secret/\n")
    assert server.only().body == {
        "default_lease_ttl": "30m",
        "max_lease_ttl": "1h",
        "description": "new",
        "listing_visibility": "unauth",
    }
    run(capsys, "secrets", "tune", "-description=", "-version=2", "-force-no-cache", "secret")
    assert server.last().body == {
        "force_no_cache": True,
        "description": "",
        "options": {"version": "2"},
    }


def test_secrets_move(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/sys/remount", {"migration_id": "m-1", "data": {"migration_id": "m-1"}})
    code, out, _ = run(capsys, "secrets", "move", "secret", "/generic/")
    assert (code, out) == (
        0,
        "Success! Finished moving secrets engine secret/ to generic/, with migration ID m-1\n",
    )
    assert server.only().body == {"from": "secret/", "to": "generic/"}
    server.on("POST", "/v1/sys/remount", None, status=204)
    code, out, _ = run(capsys, "secrets", "move", "a", "b")
    assert (code, out) == (0, "Success! Moved secrets engine a/ to: b/\n")


def test_secrets_json_mode_prints_no_success_text(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("POST", "/v1/sys/mounts/kv", None, status=204)
    assert run(capsys, "secrets", "enable", "-format=json", "kv") == (0, "", "")


# --- auth ----------------------------------------------------------------------------------------

AUTH = {"token/": entry("token", "auth_token_1", "token based credentials")}


def test_auth_enable_disable(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/sys/auth/people", None, status=204)
    server.on("DELETE", "/v1/sys/auth/people", None, status=204)
    code, out, _ = run(
        capsys,
        "auth",
        "enable",
        "-path=people",
        "-description=Humans",
        "-max-lease-ttl=8h",
        "userpass",
    )
    assert (code, out) == (0, "Success! Enabled userpass auth method at: people/\n")
    assert server.last().body == {
        "type": "userpass",
        "description": "Humans",
        "config": {"max_lease_ttl": "8h"},
        "options": {},
        "local": False,
        "seal_wrap": False,
    }
    code, out, _ = run(capsys, "auth", "disable", "people")
    assert (code, out) == (0, "Success! Disabled the auth method (if it existed) at: people/\n")


def test_auth_enable_error(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/sys/auth/ldap", {"errors": ["plugin not found in the catalog"]}, 400)
    code, _, err = run(capsys, "auth", "enable", "ldap")
    assert code == 2
    assert err.startswith("Error enabling ldap auth: Error making API request.")


def test_auth_list_and_tune(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/sys/auth", {**AUTH, "data": AUTH})
    server.on("POST", "/v1/sys/auth/token/tune", None, status=204)
    code, out, _ = run(capsys, "auth", "list")
    assert (code, out.splitlines()) == (
        0,
        [
            "Path      Type     Accessor        Description",
            "----      ----     --------        -----------",
            "token/    token    auth_token_1    token based credentials",
        ],
    )
    assert json.loads(run(capsys, "auth", "list", "-format=json")[1]) == AUTH
    assert run(capsys, "auth", "list", "-detailed")[1].startswith("Path      Plugin")
    code, out, _ = run(capsys, "auth", "tune", "-default-lease-ttl=10m", "token")
    assert (code, out) == (0, "Success! Tuned the auth method at: token/\n")
    assert server.last().body == {"default_lease_ttl": "10m"}
