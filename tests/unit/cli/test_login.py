"""``coffer login -method=userpass|idp|<other>`` against the recording fake server."""

from __future__ import annotations

import io
import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.fakes import FakeServer, Terminal, run, serving


def login_response(username: str = "alice", token: str = "hvs.user") -> dict[str, Any]:
    return {
        "request_id": "r-1",
        "lease_id": "",
        "renewable": False,
        "lease_duration": 0,
        "data": None,
        "wrap_info": None,
        "warnings": None,
        "auth": {
            "client_token": token,
            "accessor": "acc-u",
            "policies": ["default", "dev"],
            "token_policies": ["default", "dev"],
            "identity_policies": [],
            "metadata": {"username": username},
            "lease_duration": 1800,
            "renewable": True,
            "entity_id": "",
            "token_type": "service",
            "orphan": True,
            "num_uses": 0,
        },
    }


USERPASS = "/v1/auth/userpass/login/alice"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    """The fake server; no client token configured, piped (empty) stdin."""
    with serving(monkeypatch, tmp_path) as fake:
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        yield fake


def rows(out: str) -> dict[str, str]:
    """The Key/Value table of ``out`` as a dict."""
    table = {}
    for line in out.splitlines():
        key, _, value = line.partition("  ")
        if value and " " not in key:
            table[key] = value.strip()
    return table


def no_prompt(prompt: str = "", stream: object = None) -> str:
    raise AssertionError("getpass must not be called")


# --- userpass ------------------------------------------------------------------------------------


def test_userpass_login_posts_and_stores_the_token(
    server: FakeServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    server.on("POST", USERPASS, login_response())
    code, out, err = run(capsys, "login", "-method=userpass", "username=alice", "password=pw 1")
    assert (code, err) == (0, "")
    seen = server.only()
    assert seen.body == {"password": "pw 1"}
    assert "x-service-token" not in seen.headers
    token_file = tmp_path / ".coffer-token"
    assert token_file.read_text() == "hvs.user"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert out.startswith("Success! You are now authenticated.")
    shown = rows(out)
    assert shown["token"] == "hvs.user"
    assert shown["token_accessor"] == "acc-u"
    assert shown["token_duration"] == "30m"
    assert shown["token_policies"] == "[default dev]"
    assert shown["token_meta_username"] == "alice"
    assert "pw 1" not in out
    # Later commands use the stored token.
    server.on("GET", "/v1/auth/token/lookup-self", {"data": {"id": "hvs.user"}})
    run(capsys, "token", "lookup")
    assert server.last().headers["x-service-token"] == "hvs.user"


def test_the_configured_token_is_not_sent(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COFFER_TOKEN", "hvs.stale")
    server.on("POST", USERPASS, login_response())
    code, _, err = run(capsys, "login", "-method=userpass", "username=alice", "password=pw")
    assert code == 0
    assert "x-service-token" not in server.only().headers
    assert "COFFER_TOKEN environment variable is set" in err


def test_password_prompt_on_a_terminal(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts: list[str] = []

    def fake_getpass(prompt: str = "", stream: object = None) -> str:
        prompts.append(prompt)
        return " spaced pw "

    monkeypatch.setattr("getpass.getpass", fake_getpass)
    monkeypatch.setattr("sys.stdin", Terminal())
    server.on("POST", USERPASS, login_response())
    code, out, _ = run(capsys, "login", "-method=userpass", "username=alice")
    assert code == 0
    assert prompts == ["Password (will be hidden): "]
    assert server.only().body == {"password": " spaced pw "}  # spaces are part of a password
    assert " spaced pw " not in out


@pytest.mark.parametrize(
    ("stdin", "args", "sent"),
    [
        ("  s3cret  \n", [], "  s3cret  "),  # no password=: one line, its line end cut
        ("  s3cret  \r\nnext\n", [], "  s3cret  "),
        # password=- is Vault's "value from stdin": all of it, as `coffer write` reads it,
        # so a password set with `write ... password=-` logs in with the same input.
        ("s3cret\n", ["password=-"], "s3cret\n"),
    ],
)
def test_password_from_piped_stdin(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str,
    args: list[str],
    sent: str,
) -> None:
    monkeypatch.setattr("getpass.getpass", no_prompt)
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    server.on("POST", USERPASS, login_response())
    assert run(capsys, "login", "-method=userpass", "username=alice", *args)[0] == 0
    assert server.only().body == {"password": sent}


@pytest.mark.parametrize("stdin", ["", "\n"])
def test_an_empty_password_is_not_sent(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: str,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code, out, err = run(capsys, "login", "-method=userpass", "username=alice")
    assert (code, out) == (1, "")
    assert "password must not be empty" in err
    assert server.requests == []


def test_an_aborted_prompt(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(prompt: str = "", stream: object = None) -> str:
        raise EOFError

    monkeypatch.setattr("getpass.getpass", interrupted)
    monkeypatch.setattr("sys.stdin", Terminal())
    code, _, err = run(capsys, "login", "-method=userpass", "username=alice")
    assert code == 1
    assert "Error reading password: no input" in err
    assert server.requests == []


def test_username_defaults_to_the_login_name(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOGNAME", raising=False)
    monkeypatch.setenv("USER", "carol")
    server.on("POST", "/v1/auth/userpass/login/carol", login_response("carol"))
    assert run(capsys, "login", "-method=userpass", "password=pw")[0] == 0
    monkeypatch.delenv("USER")
    code, _, err = run(capsys, "login", "-method=userpass", "password=pw")
    assert code == 2
    assert "username=... is required" in err
    assert len(server.requests) == 1


def test_path_flag_and_quoting(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/auth/team/people/login/first.last", login_response("first.last"))
    argv = ["login", "-method=userpass", "-path=/team/people/", "username=first.last", "password=x"]
    assert run(capsys, *argv)[0] == 0
    run(capsys, "login", "-method=userpass", "username=a/b?c", "password=x")
    assert server.last().path == "/v1/auth/userpass/login/a%2Fb%3Fc"


def test_a_refused_login(
    server: FakeServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    server.on("POST", USERPASS, {"errors": ["invalid username or password"]}, status=400)
    code, out, err = run(capsys, "login", "-method=userpass", "username=alice", "password=pw-x")
    assert (code, out) == (2, "")
    assert err.startswith("Error authenticating: Error making API request.")
    assert "Code: 400" in err
    assert "* invalid username or password" in err
    assert "pw-x" not in err
    assert not (tmp_path / ".coffer-token").exists()


@pytest.mark.parametrize("body", [{"data": {"a": 1}}, {"auth": None}, {"auth": {"accessor": "a"}}])
def test_a_response_without_a_token(
    server: FakeServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, body: Any
) -> None:
    server.on("POST", USERPASS, body)
    code, _, err = run(capsys, "login", "-method=userpass", "username=alice", "password=pw")
    assert code == 2
    assert "the server returned no token" in err
    assert not (tmp_path / ".coffer-token").exists()


@pytest.mark.parametrize(
    ("flags", "expected", "stored"),
    [
        (["-token-only"], "hvs.user\n", False),
        (["-no-print"], "", True),
        (["-field=token_policies"], "[default dev]\n", True),
        (["-field=token", "-no-store"], "hvs.user\n", False),
    ],
)
def test_output_flags(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    flags: list[str],
    expected: str,
    stored: bool,
) -> None:
    server.on("POST", USERPASS, login_response())
    code, out, _ = run(capsys, "login", "-method=userpass", *flags, "username=alice", "password=p")
    assert (code, out) == (0, expected)
    assert (tmp_path / ".coffer-token").exists() is stored


def test_json_output_is_the_envelope(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("POST", USERPASS, login_response())
    code, out, _ = run(
        capsys, "login", "-format=json", "-method=userpass", "username=alice", "password=p"
    )
    assert code == 0
    assert json.loads(out) == login_response()


def test_data_may_follow_flags(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", USERPASS, login_response())
    code, *_ = run(capsys, "login", "username=alice", "-method=userpass", "password=p", "-no-store")
    assert code == 0
    assert server.only().body == {"password": "p"}


# --- idp -----------------------------------------------------------------------------------------


def test_idp_login_with_totp(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("POST", "/v1/auth/idp/login/Bob", login_response("bob"))
    code, out, err = run(
        capsys, "login", "-method=idp", "username=Bob", "password=pw", "totp=123456"
    )
    assert (code, err) == (0, "")
    seen = server.only()
    assert seen.path == "/v1/auth/idp/login/Bob"  # the server decides about case
    assert seen.body == {"password": "pw", "totp": "123456"}
    assert rows(out)["token"] == "hvs.user"


def test_idp_prompts_for_the_password_and_honours_path(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("getpass.getpass", lambda prompt="", stream=None: "pw")
    monkeypatch.setattr("sys.stdin", Terminal())
    server.on("POST", "/v1/auth/corp/login/bob", login_response("bob"))
    code, *_ = run(capsys, "login", "-method=idp", "-path=corp", "username=bob", "totp=000111")
    assert code == 0
    assert server.only().body == {"password": "pw", "totp": "000111"}


# --- other methods -------------------------------------------------------------------------------


def test_other_methods_post_the_pairs_to_login(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("getpass.getpass", no_prompt)
    server.on("POST", "/v1/auth/approle/login", login_response())
    code, *_ = run(capsys, "login", "-method=AppRole", "role_id=r", "secret_id=s")
    assert code == 0
    seen = server.only()
    assert seen.body == {"role_id": "r", "secret_id": "s"}
    assert "x-service-token" not in seen.headers
    server.on("POST", "/v1/auth/ldap-corp/login", login_response())
    argv = ["login", "-method=ldap", "-path=ldap-corp", "username=u", "password=p"]
    assert run(capsys, *argv)[0] == 0
    assert server.last().body == {"username": "u", "password": "p"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-method=userpass", "alice"], "invalid key/value pair 'alice'"),
        (["-method=userpass", "-path=../sys", "username=a", "password=p"], "invalid -path"),
        (["-method=approle", "-path=a//b", "role_id=r"], "invalid -path"),
        (["-method=", "x"], "-method must not be empty"),
        (["tok-1", "tok-2"], "too many arguments"),
    ],
)
def test_usage_errors(
    server: FakeServer, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, "login", *argv)
    assert (code, out) == (2, "")
    assert message in err
    assert server.requests == []


def test_the_token_method_accepts_token_equals(
    server: FakeServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    server.on("GET", "/v1/auth/token/lookup-self", {"data": {"policies": ["default"]}})
    assert run(capsys, "login", "token=hvs.abc")[0] == 0
    assert server.only().headers["x-service-token"] == "hvs.abc"
    assert (tmp_path / ".coffer-token").read_text() == "hvs.abc"
