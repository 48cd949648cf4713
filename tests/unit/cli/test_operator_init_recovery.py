"""``coffer operator init -recovery-shares/-recovery-threshold`` for an HSM-sealed server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cli.fakes import FakeServer, isolate_env, run, serving

RESPONSE = {
    "keys": [],
    "keys_base64": [],
    "recovery_keys": ["aa", "bb"],
    "recovery_keys_base64": ["qg==", "uw=="],
    "root_token": "hvs.root",
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, isolate_env(monkeypatch, tmp_path)) as fake:
        yield fake


def test_recovery_shares_are_sent_and_printed(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("PUT", "/v1/sys/init", RESPONSE)
    code, out, err = run(capsys, "operator", "init", "-recovery-shares=2", "-recovery-threshold=2")
    assert (code, err) == (0, "")
    assert server.only().body == {"recovery_shares": 2, "recovery_threshold": 2}
    assert out.splitlines()[:4] == [
        "Recovery Key 1: qg==",
        "Recovery Key 2: uw==",
        "",
        "Initial Root Token: hvs.root",
    ]
    assert "cannot unseal" in out.replace("\n", " ")


def test_recovery_json_shape(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/init", RESPONSE)
    code, out, _ = run(
        capsys, "operator", "init", "-recovery-shares=2", "-recovery-threshold=2", "-format=json"
    )
    assert code == 0
    doc = json.loads(out)
    assert (doc["unseal_shares"], doc["unseal_keys_b64"]) == (0, [])
    assert (doc["recovery_keys_shares"], doc["recovery_keys_threshold"]) == (2, 2)
    assert doc["recovery_keys_b64"] == ["qg==", "uw=="]


def test_an_hsm_sealed_server_gets_recovery_shares_by_default(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """As `vault operator init`: the seal status decides (recovery_seal), not a flag."""
    server.on("GET", "/v1/sys/seal-status", {"type": "pkcs11", "recovery_seal": True})
    server.on("PUT", "/v1/sys/init", RESPONSE)
    code, out, _ = run(capsys, "operator", "init")
    assert code == 0
    assert server.last().body == {"recovery_shares": 5, "recovery_threshold": 3}
    assert out.startswith("Recovery Key 1: qg==")


def test_a_shamir_server_gets_unseal_shares(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", "/v1/sys/seal-status", {"type": "shamir", "recovery_seal": False})
    server.on("PUT", "/v1/sys/init", RESPONSE)
    assert run(capsys, "operator", "init", "-key-shares=2", "-key-threshold=2")[0] == 0
    assert server.last().body == {"secret_shares": 2, "secret_threshold": 2}


def test_unseal_migrate_sends_the_flag(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("PUT", "/v1/sys/unseal", {"sealed": True, "t": 2, "n": 3, "progress": 1})
    code, _, _ = run(capsys, "operator", "unseal", "-migrate", "aabb")
    assert code == 0
    assert server.requests[0].body == {"key": "aabb", "migrate": True}


def test_rekey_init_and_a_share(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on(
        "PUT",
        "/v1/sys/rekey-recovery-key/init",
        {"nonce": "n1", "started": True, "t": 2, "n": 3, "progress": 0, "required": 2},
    )
    code, out, _ = run(
        capsys,
        "operator",
        "rekey",
        "-init",
        "-target=recovery",
        "-key-shares=3",
        "-key-threshold=2",
        "-verify",
    )
    assert code == 0 and "n1" in out
    assert server.last().body == {
        "secret_shares": 3,
        "secret_threshold": 2,
        "require_verification": True,
    }
    server.on(
        "PUT",
        "/v1/sys/rekey-recovery-key/update",
        {"nonce": "n1", "complete": True, "keys": ["aa"], "keys_base64": ["qg=="]},
    )
    code, out, _ = run(capsys, "operator", "rekey", "-target=recovery", "-nonce=n1", "cc")
    assert code == 0 and out.startswith("Recovery Key 1: qg==")
    assert server.last().body == {"key": "cc", "nonce": "n1"}
