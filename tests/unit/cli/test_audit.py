"""``coffer audit ...`` against the recording fake server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.cli.fakes import FakeServer, run, serving

DEVICES = {
    "file/": {
        "type": "file",
        "description": "",
        "options": {"file_path": "/var/log/audit.log", "mode": "0640"},
        "local": False,
        "path": "file/",
    },
    "net/": {
        "type": "socket",
        "description": "to the SIEM",
        "options": {"address": "10.0.0.5:9090"},
        "local": True,
        "path": "net/",
    },
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, tmp_path, token="root-token") as fake:
        yield fake


def test_enable_sends_type_options_and_flags(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("PUT", "/v1/sys/audit/net", None, status=204)
    code, out, err = run(
        capsys,
        "audit",
        "enable",
        "-path=/net/",
        "-description=to the SIEM",
        "-local",
        "socket",
        "address=10.0.0.5:9090",
        "socket_type=tcp",
    )
    assert (code, out, err) == (0, "Success! Enabled the socket audit device at: net/\n", "")
    assert server.only().body == {
        "type": "socket",
        "description": "to the SIEM",
        "options": {"address": "10.0.0.5:9090", "socket_type": "tcp"},
        "local": True,
    }


def test_enable_refuses_an_option_without_a_value(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "audit", "enable", "file", "file_path")
    assert code == 2 and "key=value" in err


def test_list_and_detailed_list(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("GET", "/v1/sys/audit", {"data": DEVICES, **DEVICES})
    code, out, _ = run(capsys, "audit", "list")
    assert code == 0
    assert out.splitlines() == [
        "Path     Type      Description",
        "----     ----      -----------",
        "file/    file      n/a",
        "net/     socket    to the SIEM",
    ]
    code, out, _ = run(capsys, "audit", "list", "-detailed")
    assert code == 0
    assert out.splitlines()[2:] == [
        "file/    file      n/a            replicated     file_path=/var/log/audit.log mode=0640",
        "net/     socket    to the SIEM    local          address=10.0.0.5:9090",
    ]
    code, out, _ = run(capsys, "audit", "list", "-format=json")
    assert code == 0 and json.loads(out) == DEVICES


def test_list_with_nothing_enabled_and_disable(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", "/v1/sys/audit", {"data": {}})
    assert run(capsys, "audit", "list")[:2] == (2, "No audit devices are enabled.\n")
    server.on("DELETE", "/v1/sys/audit/file", None, status=204)
    code, out, _ = run(capsys, "audit", "disable", "file/")
    assert (code, out) == (0, "Success! Disabled audit device (if it was enabled) at: file/\n")
