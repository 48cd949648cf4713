"""``coffer login -method=userpass`` end to end: a real ``coffer server -dev`` subprocess,
set up over plain HTTP (urllib, as curl would), and the real CLI in its own processes.

Each CLI run gets ``HOME`` = the test's directory and no ``COFFER_TOKEN``, so the
token it stores in ``~/.coffer-token`` is what later commands use. Without a
``password=`` argument the CLI reads the password as one line of stdin when stdin
is not a terminal (a terminal gets a hidden prompt), which the piped test uses.
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
from harness.rest import fetch
from harness.server import dev_server as module_dev_server
from tests.integration.conftest import no_proxy_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = "root"
ALICE_PASSWORD = "alice's long passphrase"
BOB_PASSWORD = "bob-pw-2"
CLI_TIMEOUT = 30.0


@dataclass
class Server:
    address: str
    stderr_path: Path

    def api(self, method: str, path: str, body: Any = None, token: str | None = ROOT) -> Any:
        """One request, curl-style; returns (status, parsed body or None)."""
        reply = fetch(method, f"{self.address}/v1/{path}", body, timeout=10, token=token or None)
        return reply.status, reply.doc

    def ok(self, method: str, path: str, body: Any = None, token: str | None = ROOT) -> Any:
        status, doc = self.api(method, path, body, token)
        assert status in (200, 204), (method, path, status, doc, self.log_tail())
        return doc

    def log_tail(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A dev server with userpass at ``userpass/`` (alice) and ``people/`` (bob)."""
    logs = tmp_path_factory.mktemp("login-methods-server")
    with module_dev_server(logs, ROOT) as process:
        server = Server(process.base_url, process.stderr_path)
        _set_up(server)
        yield server


def _set_up(server: Server) -> None:
    server.ok("POST", "sys/auth/userpass", {"type": "userpass"})
    server.ok("POST", "sys/auth/people", {"type": "userpass"})
    rules = 'path "secret/data/app/*" { capabilities = ["read"] }'
    server.ok("PUT", "sys/policies/acl/app-reader", {"policy": rules})
    server.ok("POST", "secret/data/app/db", {"data": {"user": "svc"}})
    server.ok("POST", "secret/data/ops/db", {"data": {"user": "ops"}})
    alice = {"password": ALICE_PASSWORD, "token_policies": "app-reader", "token_ttl": "15m"}
    server.ok("POST", "auth/userpass/users/alice", alice)
    server.ok("POST", "auth/people/users/bob", {"password": BOB_PASSWORD})


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path


def coffer(server: Server, home: Path, *args: str, stdin: str = "") -> Result:
    """The real CLI as a child process: no client token configured, HOME = ``home``."""
    env = {**no_proxy_env(), "COFFER_ADDR": server.address, "HOME": str(home)}
    proc = subprocess.run(
        [*coffer_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_userpass_login_stores_a_working_token(server: Server, home: Path) -> None:
    result = coffer(
        server, home, "login", "-method=userpass", "username=alice", f"password={ALICE_PASSWORD}"
    )
    assert result.code == 0, result
    assert result.out.startswith("Success! You are now authenticated.")
    assert ALICE_PASSWORD not in result.out + result.err
    token_file = home / ".coffer-token"
    token = token_file.read_text()
    assert token.startswith("hvs.")
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token in result.out

    # Later commands use the stored token: the policy allows app/, nothing else.
    read = coffer(server, home, "kv", "get", "-format=json", "secret/app/db")
    assert read.code == 0, read
    assert json.loads(read.out)["data"]["data"] == {"user": "svc"}
    denied = coffer(server, home, "kv", "get", "secret/ops/db")
    assert denied.code == 2 and "permission denied" in denied.err, denied
    looked = coffer(server, home, "token", "lookup", "-format=json")
    assert looked.code == 0, looked
    data = json.loads(looked.out)["data"]
    assert data["display_name"] == "userpass-alice"
    assert data["meta"] == {"username": "alice"}
    assert data["policies"] == ["app-reader", "default"]
    assert 0 < data["ttl"] <= 900


def test_password_from_piped_stdin(server: Server, home: Path) -> None:
    result = coffer(
        server, home, "login", "-method=userpass", "username=alice", stdin=ALICE_PASSWORD + "\n"
    )
    assert result.code == 0, result
    assert "Password" not in result.err  # piped: read without a prompt
    token = (home / ".coffer-token").read_text()
    status, doc = server.api("GET", "secret/data/app/db", token=token)
    assert status == 200 and doc["data"]["data"] == {"user": "svc"}


def test_a_wrong_password_stores_nothing(server: Server, home: Path) -> None:
    result = coffer(server, home, "login", "-method=userpass", "username=alice", "password=nope")
    assert result.code == 2, result
    assert "Code: 400" in result.err
    assert "invalid username or password" in result.err
    assert "nope" not in result.err
    assert not (home / ".coffer-token").exists()
    unknown = coffer(server, home, "login", "-method=userpass", "username=zed", "password=nope")
    assert unknown.code == 2
    # An unknown user gets the same answer as a wrong password (only the URL differs).
    assert unknown.err[unknown.err.index("Code: ") :] == result.err[result.err.index("Code: ") :]


def test_path_flag_json_and_token_only(server: Server, home: Path) -> None:
    argv = ["login", "-method=userpass", "-path=people", "username=bob", f"password={BOB_PASSWORD}"]
    result = coffer(server, home, *argv, "-format=json")
    assert result.code == 0, result
    auth = json.loads(result.out)["auth"]
    assert auth["metadata"] == {"username": "bob"}
    assert auth["policies"] == ["default"]
    assert (home / ".coffer-token").read_text() == auth["client_token"]

    only = coffer(server, home, *argv, "-token-only")
    assert only.code == 0, only
    token = only.out.strip()
    assert token.startswith("hvs.") and token != auth["client_token"]
    assert (home / ".coffer-token").read_text() == auth["client_token"]  # -token-only: not stored
    status, doc = server.api("GET", "auth/token/lookup-self", token=token)
    assert status == 200 and doc["data"]["path"] == "auth/people/login/bob"
