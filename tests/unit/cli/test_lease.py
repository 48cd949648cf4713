"""``coffer lease ...`` and ``coffer operator step-down``: the requests they send."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cli.fakes import FakeServer, run, serving

LEASE = "auth/userpass/login/alice/0a1b"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, tmp_path, token="root-token") as fake:
        yield fake


def test_revoke_one_lease(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/leases/revoke", None, status=204)
    code, out, err = run(capsys, "lease", "revoke", LEASE)
    assert (code, out, err) == (0, f"Success! Revoked lease: {LEASE}\n", "")
    assert server.only().body == {"lease_id": LEASE, "sync": True}


@pytest.mark.parametrize(
    ("flags", "path", "body", "said"),
    [
        (["-prefix"], "/v1/sys/leases/revoke-prefix/auth/userpass/", {"sync": True}, "Revoked"),
        (
            ["-prefix", "-sync=false"],
            "/v1/sys/leases/revoke-prefix/auth/userpass/",
            {"sync": False},
            "Revoked",
        ),
        (
            ["-prefix", "-force"],
            "/v1/sys/leases/revoke-force/auth/userpass/",
            None,
            "Force revoked",
        ),
    ],
)
def test_revoke_prefix(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    path: str,
    body: object,
    said: str,
) -> None:
    server.on("PUT", path, None, status=204)
    code, out, _ = run(capsys, "lease", "revoke", *flags, "auth/userpass/")
    assert code == 0
    assert out == f"Success! {said} any leases with prefix: auth/userpass/\n"
    seen = server.only()
    assert (seen.method, seen.path) == ("PUT", path)
    assert (seen.body or None) == body


def test_force_needs_prefix(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "lease", "revoke", "-force", "auth/userpass/")
    assert code == 2 and "-force requires also specifying -prefix" in err
    assert server.requests == []


def test_lookup_and_renew(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"id": LEASE, "ttl": 3599, "renewable": True}
    server.on("PUT", "/v1/sys/leases/lookup", {"data": data})
    code, out, _ = run(capsys, "lease", "lookup", LEASE)
    assert code == 0 and "59m59s" in out
    assert server.last().body == {"lease_id": LEASE}
    refused = {"errors": ["tokens cannot be renewed through this endpoint"]}
    server.on("PUT", "/v1/sys/leases/renew", refused, status=400)
    code, _, err = run(capsys, "lease", "renew", "-increment=1h", LEASE)
    assert code == 2 and "tokens cannot be renewed" in err
    assert server.last().body == {"lease_id": LEASE, "increment": "1h"}


def test_step_down(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("PUT", "/v1/sys/step-down", None, status=204)
    code, out, err = run(capsys, "operator", "step-down")
    assert code == 0 and out == f"Success! Stepped down: {server.address}\n", err
    assert server.only().path == "/v1/sys/step-down"
