"""The CLI against a real (tiny, canned) HTTP server: requests sent, output printed.

The server (``tests.unit.cli.fakes.FakeServer``) records every request and
answers from a table of Vault-shaped responses.
"""

from __future__ import annotations

import io
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from cli.generate_root import BASE62, decode_token
from harness.ports import free_port
from tests.unit.cli.fakes import FakeServer, Terminal, isolate_env, run, serving

SEAL_STATUS: dict[str, Any] = {
    "type": "shamir",
    "initialized": True,
    "sealed": False,
    "t": 3,
    "n": 5,
    "progress": 0,
    "nonce": "",
    "version": "0.1.0",
    "build_date": "2024-01-01T00:00:00Z",
    "migration": False,
    "cluster_name": "coffer-cluster",
    "cluster_id": "cid-1",
    "recovery_seal": False,
    "storage_type": "inmem",
}
LEADER = {"ha_enabled": False, "is_self": False, "active_time": "0001-01-01T00:00:00Z"}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No COFFER_/VAULT_ settings leak in; HOME is empty (no token file)."""
    return isolate_env(monkeypatch, tmp_path)


@pytest.fixture
def server(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    with serving(monkeypatch, clean_env) as fake:
        yield fake


# --- operator init -------------------------------------------------------------------------------

INIT_RESPONSE = {
    "keys": ["aa", "bb", "cc"],
    "keys_base64": ["qg==", "uw==", "zA=="],
    "root_token": "hvs.root",
}


def test_init_table(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/init", INIT_RESPONSE)
    code, out, err = run(capsys, "operator", "init", "-key-shares=3", "-key-threshold=2")
    assert (code, err) == (0, "")
    assert server.calls() == [("GET", "/v1/sys/seal-status"), ("PUT", "/v1/sys/init")]
    seen = server.last()
    assert seen.body == {"secret_shares": 3, "secret_threshold": 2}
    assert seen.headers["content-type"] == "application/json"
    assert "x-service-token" not in seen.headers
    lines = out.splitlines()
    assert lines[:5] == [
        "Unseal Key 1: qg==",
        "Unseal Key 2: uw==",
        "Unseal Key 3: zA==",
        "",
        "Initial Root Token: hvs.root",
    ]
    assert "3 key shares and a key threshold of 2" in out


def test_init_json_uses_the_vault_cli_shape(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("PUT", "/v1/sys/init", INIT_RESPONSE)
    code, out, _ = run(
        capsys, "operator", "init", "--key-shares", "3", "-key-threshold", "2", "-format=json"
    )
    assert code == 0
    assert json.loads(out) == {
        "unseal_keys_b64": ["qg==", "uw==", "zA=="],
        "unseal_keys_hex": ["aa", "bb", "cc"],
        "unseal_shares": 3,
        "unseal_threshold": 2,
        "recovery_keys_b64": [],
        "recovery_keys_hex": [],
        "recovery_keys_shares": 0,
        "recovery_keys_threshold": 0,
        "root_token": "hvs.root",
    }


def test_init_defaults(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/init", INIT_RESPONSE)
    assert run(capsys, "operator", "init")[0] == 0
    assert server.last().body == {"secret_shares": 5, "secret_threshold": 3}


@pytest.mark.parametrize(("initialized", "code"), [(True, 0), (False, 2)])
def test_init_status(
    server: FakeServer, capsys: pytest.CaptureFixture[str], initialized: bool, code: int
) -> None:
    server.on("GET", "/v1/sys/init", {"initialized": initialized})
    assert run(capsys, "operator", "init", "-status")[0] == code
    assert server.only().method == "GET"


# --- operator unseal / seal ----------------------------------------------------------------------


def test_unseal_with_key_prints_seal_status(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sealed = {**SEAL_STATUS, "sealed": True, "progress": 1, "nonce": "n-1"}
    server.on("PUT", "/v1/sys/unseal", sealed)
    server.on("GET", "/v1/sys/leader", {"errors": ["Coffer is sealed"]}, status=503)
    code, out, err = run(capsys, "operator", "unseal", "KEY1")
    assert (code, err) == (0, "")
    assert server.requests[0].body == {"key": "KEY1"}
    assert "Unseal Progress    1/3" in out
    assert "Unseal Nonce       n-1" in out
    assert "KEY1" not in out


def test_unseal_prompts_without_echo(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts: list[str] = []

    def fake_getpass(prompt: str = "Password: ", stream: object = None) -> str:
        prompts.append(prompt)
        return "  KEY2\n"

    monkeypatch.setattr("getpass.getpass", fake_getpass)
    monkeypatch.setattr("sys.stdin", Terminal())
    server.on("PUT", "/v1/sys/unseal", SEAL_STATUS)
    server.on("GET", "/v1/sys/leader", LEADER)
    code, out, _ = run(capsys, "operator", "unseal", "-format=json")
    assert code == 0
    assert prompts == ["Unseal Key (will be hidden): "]
    assert server.requests[0].body == {"key": "KEY2"}
    assert json.loads(out) == {**SEAL_STATUS, **LEADER}


def test_unseal_empty_prompt_is_an_error(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "")
    monkeypatch.setattr("sys.stdin", Terminal())
    code, _, err = run(capsys, "operator", "unseal")
    assert code == 1
    assert "must not be empty" in err
    assert server.requests == []


def test_unseal_reads_piped_stdin_without_prompting(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_prompt(prompt: str = "") -> str:
        raise AssertionError("must not prompt when stdin is a pipe")

    monkeypatch.setattr("getpass.getpass", no_prompt)
    monkeypatch.setattr("sys.stdin", io.StringIO("KEY3\n"))
    server.on("PUT", "/v1/sys/unseal", SEAL_STATUS)
    code, _, err = run(capsys, "operator", "unseal")
    assert (code, err) == (0, "")
    assert server.requests[0].body == {"key": "KEY3"}


def test_unseal_reset(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/unseal", {**SEAL_STATUS, "sealed": True})
    assert run(capsys, "operator", "unseal", "-reset")[0] == 0
    assert server.requests[0].body == {"reset": True}


def test_seal_sends_token_and_namespace(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COFFER_TOKEN", "hvs.tok")
    monkeypatch.setenv("VAULT_NAMESPACE", "team-a")
    server.on("PUT", "/v1/sys/seal", None, status=204)
    code, out, err = run(capsys, "operator", "seal")
    assert (code, out, err) == (0, "Success! Coffer is sealed.\n", "")
    seen = server.only()
    assert seen.headers["x-service-token"] == "hvs.tok"
    assert seen.headers["x-service-namespace"] == "team-a"


def test_token_flag_beats_env_and_file(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (Path.home() / ".coffer-token").write_text("from-file\n")
    server.on("PUT", "/v1/sys/seal", None, status=204)
    run(capsys, "operator", "seal")
    monkeypatch.setenv("COFFER_TOKEN", "from-env")
    run(capsys, "operator", "seal")
    run(capsys, "operator", "seal", "-token=from-flag")
    assert [r.headers["x-service-token"] for r in server.requests] == [
        "from-file",
        "from-env",
        "from-flag",
    ]


def test_address_flag_beats_env(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COFFER_ADDR", "http://127.0.0.1:1")
    server.on("GET", "/v1/sys/seal-status", SEAL_STATUS)
    assert run(capsys, "status", f"-address={server.address}")[0] == 0


# --- status --------------------------------------------------------------------------------------


def test_status_unsealed_exits_0(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/sys/seal-status", SEAL_STATUS)
    server.on("GET", "/v1/sys/leader", LEADER)
    code, out, err = run(capsys, "status")
    assert (code, err) == (0, "")
    assert out.splitlines()[:3] == [
        "Key             Value",
        "---             -----",
        "Seal Type       shamir",
    ]
    assert "HA Enabled      false" in out
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/v1/sys/seal-status"),
        ("GET", "/v1/sys/leader"),
    ]


def test_status_sealed_exits_2(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/sys/seal-status", {**SEAL_STATUS, "sealed": True})
    code, out, _ = run(capsys, "status", "-format=json")
    assert code == 2
    assert json.loads(out)["sealed"] is True


def test_status_error_exits_1(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/sys/seal-status", {"errors": ["boom"]}, status=500)
    code, out, err = run(capsys, "status")
    assert (code, out) == (1, "")
    assert err.startswith("Error checking seal status: Error making API request.")
    assert "Code: 500. Errors:\n\n* boom" in err


# --- generate-root -------------------------------------------------------------------------------

ATTEMPT = "/v1/sys/generate-root/attempt"
UPDATE = "/v1/sys/generate-root/update"
STARTED = {
    "nonce": "nonce-1",
    "started": True,
    "progress": 0,
    "required": 3,
    "complete": False,
    "encoded_token": "",
    "encoded_root_token": "",
    "pgp_fingerprint": "",
    "otp": "",
    "otp_length": 28,
}


def test_generate_root_init(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", ATTEMPT, {**STARTED, "otp": "O" * 28})
    code, out, err = run(capsys, "operator", "generate-root", "-init")
    assert code == 0
    assert server.only().body == {}
    assert "Nonce         nonce-1" in out
    assert "OTP           " + "O" * 28 in out
    assert "One-Time-Password" in err


def test_generate_root_status_and_cancel(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", ATTEMPT, STARTED)
    server.on("DELETE", ATTEMPT, None, status=204)
    code, out, _ = run(capsys, "operator", "generate-root", "-status", "-format=json")
    assert (code, json.loads(out)) == (0, STARTED)
    code, out, _ = run(capsys, "operator", "generate-root", "-cancel")
    assert code == 0
    assert out.startswith("Success! Root token generation canceled")
    assert [r.method for r in server.requests] == ["GET", "DELETE"]


def test_generate_root_generate_otp_uses_server_length(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", ATTEMPT, {**STARTED, "otp_length": 26})
    code, out, _ = run(capsys, "operator", "generate-root", "-generate-otp")
    otp = out.strip()
    assert (code, len(otp)) == (0, 26)
    assert set(otp) <= set(BASE62)


def test_generate_root_provide_key_until_complete(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("PUT", UPDATE, {**STARTED, "progress": 3, "complete": True, "encoded_token": "ENC"})
    code, out, _ = run(capsys, "operator", "generate-root", "-nonce=nonce-1", "KEY3")
    assert code == 0
    assert server.only().body == {"key": "KEY3", "nonce": "nonce-1"}
    assert "Encoded Token    ENC" in out
    assert "Complete         true" in out


def test_generate_root_provide_prompts_and_looks_up_nonce(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "KEY1")
    monkeypatch.setattr("sys.stdin", Terminal())
    server.on("GET", ATTEMPT, STARTED)
    server.on("PUT", UPDATE, {**STARTED, "progress": 1})
    code, out, err = run(capsys, "operator", "generate-root")
    assert code == 0
    assert server.requests[1].body == {"key": "KEY1", "nonce": "nonce-1"}
    assert "Operation nonce: nonce-1" in err
    assert "Progress      1/3" in out


def test_generate_root_provide_without_attempt(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", ATTEMPT, {**STARTED, "started": False, "nonce": ""})
    code, _, err = run(capsys, "operator", "generate-root", "KEY1")
    assert code == 1
    assert "generate-root -init" in err


def test_generate_root_full_flow_decodes(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.generate_root import encode_token

    otp = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    encoded = encode_token("hvs.NEWROOTTOKEN1234567890ab", otp)
    server.on("PUT", UPDATE, {**STARTED, "complete": True, "encoded_token": encoded})
    _, out, _ = run(capsys, "operator", "generate-root", "-nonce=nonce-1", "-format=json", "K")
    assert decode_token(json.loads(out)["encoded_token"], otp) == "hvs.NEWROOTTOKEN1234567890ab"


# --- read / write / delete / list ----------------------------------------------------------------


def test_write_key_values_file_and_stdin(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "cert.pem").write_text("PEM DATA\n")
    server.on("PUT", "/v1/secret/app", None, status=204)
    monkeypatch.setattr("sys.stdin", io.StringIO('{"from_stdin": 1}'))
    code, out, _ = run(
        capsys,
        "write",
        "secret/app",
        "a=1",
        "tag=x",
        "tag=y",
        f"cert=@{tmp_path}/cert.pem",
        r"at=\@lit",
        "-",
    )
    assert (code, out) == (0, "Success! Data written to: secret/app\n")
    assert server.only().body == {
        "a": "1",
        "tag": ["x", "y"],
        "cert": "PEM DATA\n",
        "at": "@lit",
        "from_stdin": 1,
    }


def test_write_prints_response_data(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on(
        "PUT",
        "/v1/auth/token/create",
        {"auth": {"client_token": "hvs.child", "lease_duration": 3600, "policies": ["default"]}},
    )
    code, out, _ = run(capsys, "write", "-force", "auth/token/create")
    assert code == 0
    assert server.only().body == {}
    assert "token                hvs.child" in out
    assert "token_duration       1h" in out
    assert "policies             [default]" in out


def test_write_without_data_needs_force(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "write", "secret/app")
    assert code == 2
    assert "-force" in err
    assert server.requests == []


def test_read_table_json_and_field(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    secret = {"request_id": "r", "lease_id": "", "lease_duration": 2764800, "renewable": False,
              "data": {"password": "hunter2", "n": 3}, "warnings": None}  # fmt: skip
    server.on("GET", "/v1/secret/my%20app", secret)
    code, out, _ = run(capsys, "read", "/secret/my app/")
    assert code == 0
    assert out.splitlines() == [
        "Key                 Value",
        "---                 -----",
        "refresh_interval    768h",
        "n                   3",
        "password            hunter2",
    ]
    assert json.loads(run(capsys, "read", "-format=json", "secret/my app")[1]) == secret
    assert run(capsys, "read", "-field=password", "secret/my app")[1] == "hunter2\n"


def test_read_missing_is_no_value_found(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "read", "secret/nope")
    assert (code, out, err) == (2, "", "No value found at secret/nope\n")


def test_list_uses_the_list_verb(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("LIST", "/v1/secret/", {"data": {"keys": ["a", "b/"]}})
    code, out, _ = run(capsys, "list", "secret")
    assert (code, out) == (0, "Keys\n----\na\nb/\n")
    assert server.only().method == "LIST"
    assert json.loads(run(capsys, "list", "secret/", "-format=json")[1]) == ["a", "b/"]


def test_delete(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("DELETE", "/v1/secret/app", None, status=204)
    code, out, _ = run(capsys, "delete", "secret/app")
    assert (code, out) == (0, "Success! Data deleted (if it existed) at: secret/app\n")


def test_warnings_go_to_stderr(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/secret/w", {"data": {"k": "v"}, "warnings": ["deprecated path"]})
    code, out, err = run(capsys, "read", "secret/w")
    assert code == 0
    assert "* deprecated path" in err
    assert "deprecated" not in out


# --- errors and transport ------------------------------------------------------------------------


def test_api_error_output(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on(
        "PUT",
        "/v1/sys/init",
        {"errors": ["invalid seal configuration: threshold > shares"]},
        status=400,
    )
    code, out, err = run(capsys, "operator", "init", "-key-shares=1", "-key-threshold=2")
    assert (code, out) == (2, "")
    assert err == (
        "Error initializing: Error making API request.\n\n"
        f"URL: PUT {server.address}/v1/sys/init\n"
        "Code: 400. Errors:\n\n"
        "* invalid seal configuration: threshold > shares\n"
    )


def test_errors_never_show_the_token(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COFFER_TOKEN", "hvs.supersecret")
    server.on("PUT", "/v1/sys/seal", {"errors": ["bad token hvs.supersecret"]}, status=403)
    code, _, err = run(capsys, "operator", "seal")
    assert code == 2
    assert "hvs.supersecret" not in err
    assert "* bad token <redacted>" in err


def test_non_json_error_body(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/seal", "upstream down", status=502)
    code, _, err = run(capsys, "operator", "seal")
    assert code == 2
    assert "Code: 502" in err


def test_redirect_is_followed_with_method_body_and_token(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COFFER_TOKEN", "hvs.tok")
    server.on("PUT", "/v1/secret/a", None, status=307, headers={"Location": "/v1/secret/b"})
    server.on("PUT", "/v1/secret/b", None, status=204)
    assert run(capsys, "write", "secret/a", "k=v")[0] == 0
    _, second = server.requests
    assert (second.method, second.path, second.body) == ("PUT", "/v1/secret/b", {"k": "v"})
    assert second.headers["x-service-token"] == "hvs.tok"


def test_connection_refused(clean_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # a port nobody listens on
    code, out, err = run(
        capsys, "operator", "seal", f"-address=http://127.0.0.1:{port}", "-token=t0k"
    )
    assert (code, out) == (2, "")
    assert err == f"Error sealing: PUT http://127.0.0.1:{port}/v1/sys/seal: connection refused\n"


def test_plain_http_server_with_https_address(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    https = server.address.replace("http://", "https://")
    code, _, err = run(capsys, "status", f"-address={https}")
    assert code == 1
    assert "server gave HTTP response to HTTPS client" in err


# --- TLS -----------------------------------------------------------------------------------------


@pytest.fixture
def tls_server(clean_env: Path, tmp_path: Path) -> Iterator[tuple[FakeServer, Path]]:
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    fake = FakeServer(tls=context)
    fake.on("GET", "/v1/sys/seal-status", SEAL_STATUS)
    fake.start()
    try:
        yield fake, ca_file
    finally:
        fake.stop()


def test_tls_needs_the_ca(
    tls_server: tuple[FakeServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    fake, _ = tls_server
    code, _, err = run(capsys, "status", f"-address={fake.address}")
    assert code == 1
    assert "TLS certificate verification failed" in err
    assert "COFFER_CACERT" in err


def test_tls_with_ca_flag_env_or_skip_verify(
    tls_server: tuple[FakeServer, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake, ca_file = tls_server
    address = f"-address={fake.address}"
    assert run(capsys, "status", address, f"-ca-cert={ca_file}")[0] == 0
    assert run(capsys, "status", address, "-tls-skip-verify")[0] == 0
    monkeypatch.setenv("VAULT_CACERT", str(ca_file))
    assert run(capsys, "status", address)[0] == 0
    monkeypatch.setenv("COFFER_SKIP_VERIFY", "true")
    monkeypatch.setenv("VAULT_CACERT", str(ca_file.with_name("missing.pem")))
    code, _, err = run(capsys, "status", address)
    assert code == 1
    assert "could not load CA certificates" in err


# --- generic commands: query data, warnings on 404 ------------------------------------------------


def test_read_and_delete_send_pairs_as_the_query(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", "/v1/secret/data/app?version=2&x=a+b", {"data": {"k": "v"}})
    server.on("DELETE", "/v1/secret/app?soft=true", None, status=204)
    assert run(capsys, "read", "secret/data/app", "version=2", "x=a b")[0] == 0
    assert run(capsys, "delete", "secret/app", "soft=true")[0] == 0
    assert server.calls() == [
        ("GET", "/v1/secret/data/app?version=2&x=a+b"),
        ("DELETE", "/v1/secret/app?soft=true"),
    ]


def test_read_404_warnings_are_shown(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    warning = "Invalid path for a versioned K/V secrets engine."
    server.on("GET", "/v1/secret/app", {"data": None, "warnings": [warning]}, status=404)
    code, out, err = run(capsys, "read", "secret/app")
    assert (code, out) == (2, "")
    assert f"* {warning}" in err
    assert err.endswith("No value found at secret/app\n")


def test_write_json_mode_prints_nothing_for_an_empty_response(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("PUT", "/v1/secret/app", None, status=204)
    assert run(capsys, "write", "-format=json", "secret/app", "a=1") == (0, "", "")


def test_an_http_redirect_to_https_uses_the_tls_settings(
    tls_server: tuple[FakeServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The TLS context is built on first https use, with -ca-cert, not the system CAs."""
    fake, ca_file = tls_server
    plain = FakeServer()
    target = f"{fake.address}/v1/sys/seal-status"
    plain.on("GET", "/v1/sys/seal-status", status=307, headers={"Location": target})
    plain.start()
    try:
        address = f"-address={plain.address}"
        code, _, err = run(capsys, "status", address)
        assert code == 1
        assert "TLS certificate verification failed" in err
        assert run(capsys, "status", address, f"-ca-cert={ca_file}")[0] == 0
    finally:
        plain.stop()
