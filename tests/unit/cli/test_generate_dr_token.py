"""``coffer operator generate-root -dr-token``: the DR secondary's operation-token endpoints,
and ``-decode`` done locally (no request at all)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.generate_root import BASE62, decode_token, encode_token
from tests.unit.cli.fakes import FakeServer, isolate_env, run, serving

BASE = "/v1/sys/replication/dr/secondary/generate-operation-token"
ATTEMPT = f"{BASE}/attempt"
UPDATE = f"{BASE}/update"
STARTED: dict[str, Any] = {
    "nonce": "dr-nonce",
    "started": True,
    "progress": 0,
    "required": 2,
    "complete": False,
    "encoded_token": "",
    "encoded_root_token": "",
    "pgp_fingerprint": "",
    "otp": "",
    "otp_length": 28,
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, isolate_env(monkeypatch, tmp_path)) as fake:
        yield fake


def test_init_uses_the_dr_endpoint(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", ATTEMPT, {**STARTED, "otp": "O" * 28})

    code, out, err = run(capsys, "operator", "generate-root", "-dr-token", "-init")

    assert code == 0
    seen = server.only()
    assert (seen.method, seen.path, seen.body) == ("PUT", ATTEMPT, {})
    assert "Nonce         dr-nonce" in out
    assert "OTP           " + "O" * 28 in out
    assert "decode the resulting DR operation token" in err


def test_init_with_an_otp(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", ATTEMPT, STARTED)
    otp = "A" * 28

    code, _, _ = run(capsys, "operator", "generate-root", "-dr-token", "-init", f"-otp={otp}")

    assert code == 0
    assert server.only().body == {"otp": otp}


def test_status_cancel_and_generate_otp(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", ATTEMPT, {**STARTED, "otp_length": 30})
    server.on("DELETE", ATTEMPT, None, status=204)

    code, out, _ = run(capsys, "operator", "generate-root", "-dr-token", "-status", "-format=json")
    assert (code, json.loads(out)["nonce"]) == (0, "dr-nonce")
    code, out, _ = run(capsys, "operator", "generate-root", "-dr-token", "-generate-otp")
    assert (code, len(out.strip())) == (0, 30)
    assert set(out.strip()) <= set(BASE62)
    code, out, _ = run(capsys, "operator", "generate-root", "-dr-token", "-cancel")
    assert code == 0
    assert out.startswith("Success! DR operation token generation canceled")
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", ATTEMPT),
        ("GET", ATTEMPT),
        ("DELETE", ATTEMPT),
    ]


def test_provide_reads_the_nonce_and_completes(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    otp = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    encoded = encode_token("hvs.DROPERATIONTOKEN12345678", otp)
    server.on("GET", ATTEMPT, STARTED)
    server.on("PUT", UPDATE, {**STARTED, "progress": 2, "complete": True, "encoded_token": encoded})

    code, out, _ = run(capsys, "operator", "generate-root", "-dr-token", "-format=json", "KEY2")

    assert code == 0
    assert server.requests[1].path == UPDATE
    assert server.requests[1].body == {"key": "KEY2", "nonce": "dr-nonce"}
    assert decode_token(json.loads(out)["encoded_token"], otp) == "hvs.DROPERATIONTOKEN12345678"


def test_provide_without_an_attempt_names_the_dr_init(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", ATTEMPT, {**STARTED, "started": False, "nonce": ""})

    code, _, err = run(capsys, "operator", "generate-root", "-dr-token", "KEY1")

    assert code == 1
    assert "no DR operation token generation is in progress" in err
    assert "generate-root -dr-token -init" in err


def test_server_refusal_is_shown(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", ATTEMPT, {"errors": ["this cluster is not a DR secondary"]}, status=400)

    code, _, err = run(capsys, "operator", "generate-root", "-dr-token", "-init")

    assert code == 2
    assert "this cluster is not a DR secondary" in err


def test_decode_is_local(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    otp = "Q" * 28
    encoded = encode_token("hvs." + "z" * 24, otp)

    code, out, _ = run(
        capsys, "operator", "generate-root", "-dr-token", f"-decode={encoded}", f"-otp={otp}"
    )

    assert (code, out.strip()) == (0, "hvs." + "z" * 24)
    assert server.requests == []


def test_decode_error_names_the_dr_token(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "operator", "generate-root", "-dr-token", "-decode=AAAA", "-otp=" + "x" * 28
    )

    assert code != 0
    assert "Error decoding DR operation token" in err
    assert "x" * 28 not in err
