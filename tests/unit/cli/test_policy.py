"""``coffer policy ...``: requests against the fake server, and ``policy fmt`` locally."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.hclfmt import HclFormatError, format_hcl
from tests.unit.cli.fakes import FakeServer, isolate_env, run, serving

POLICY = 'path "secret/data/app/*" {\n  capabilities = ["read", "list"]\n}\n'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, tmp_path, token="root-token") as fake:
        yield fake


def test_write_from_file_lowercases_the_name(
    server: FakeServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "app.hcl").write_text(POLICY)
    server.on("PUT", "/v1/sys/policies/acl/app-read", None, status=204)
    code, out, err = run(capsys, "policy", "write", "App-Read", str(tmp_path / "app.hcl"))
    assert (code, out, err) == (0, "Success! Uploaded policy: app-read\n", "")
    seen = server.only()
    assert (seen.method, seen.path, seen.body) == (
        "PUT",
        "/v1/sys/policies/acl/app-read",
        {"policy": POLICY},
    )
    assert seen.headers["x-service-token"] == "root-token"


def test_write_from_stdin(
    server: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(POLICY))
    server.on("PUT", "/v1/sys/policies/acl/app", None, status=204)
    assert run(capsys, "policy", "write", "app", "-")[0] == 0
    assert server.only().body == {"policy": POLICY}


def test_write_errors(
    server: FakeServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "policy", "write", "app", str(tmp_path / "missing.hcl"))
    assert code == 1
    assert err.startswith("Error reading policy from ")
    (tmp_path / "bad.hcl").write_text("path {")
    server.on("PUT", "/v1/sys/policies/acl/app", {"errors": ['failed to parse policy "app"']}, 400)
    code, _, err = run(capsys, "policy", "write", "app", str(tmp_path / "bad.hcl"))
    assert code == 2
    assert err.startswith("Error uploading policy app: Error making API request.")


def test_read(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    body = {"name": "app", "policy": POLICY, "data": {"name": "app", "policy": POLICY}}
    server.on("GET", "/v1/sys/policies/acl/app", body)
    assert run(capsys, "policy", "read", "APP") == (0, POLICY, "")
    assert json.loads(run(capsys, "policy", "read", "-format=json", "app")[1]) == {"policy": POLICY}
    code, out, err = run(capsys, "policy", "read", "nope")
    assert (code, out, err) == (2, "", "No policy named: nope\n")


def test_list(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("LIST", "/v1/sys/policies/acl/", {"data": {"keys": ["app", "default", "root"]}})
    assert run(capsys, "policy", "list") == (0, "app\ndefault\nroot\n", "")
    assert json.loads(run(capsys, "policy", "list", "-format=json")[1]) == [
        "app",
        "default",
        "root",
    ]
    assert server.requests[0].method == "LIST"


def test_delete(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.on("DELETE", "/v1/sys/policies/acl/app", None, status=204)
    assert run(capsys, "policy", "delete", "app") == (0, "Success! Deleted policy: app\n", "")


# --- fmt -----------------------------------------------------------------------------------------

MESSY = """\
# Read access for the app
// and listing

path "secret/data/app/*" { capabilities=["read","list"] # no writes
  min_wrapping_ttl = "1s"
  allowed_parameters = { "*" = [], "ttl" = ["1h","2h"] }
}
path "auth/token/lookup-self" {
capabilities = [
"read"
]
}
"""
TIDY = """\
# Read access for the app
// and listing

path "secret/data/app/*" {
  capabilities     = ["read", "list"]  # no writes
  min_wrapping_ttl = "1s"
  allowed_parameters = {
    "*"   = []
    "ttl" = ["1h", "2h"]
  }
}

path "auth/token/lookup-self" {
  capabilities = ["read"]
}
"""


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No server at all: ``fmt`` must not need one (or valid settings)."""
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.setenv("COFFER_ADDR", "not a url")
    return tmp_path


def test_fmt_rewrites_in_place(local: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = local / "app.hcl"
    path.write_text(MESSY)
    code, out, err = run(capsys, "policy", "fmt", str(path))
    assert (code, out, err) == (0, f"Success! Formatted policy: {path}\n", "")
    assert path.read_text() == TIDY
    assert run(capsys, "policy", "fmt", str(path))[0] == 0
    assert path.read_text() == TIDY  # idempotent


def test_fmt_json_becomes_hcl(local: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = local / "app.json"
    doc = {"path": {"secret/*": {"capabilities": ["read"]}, "sys/mounts": {"policy": "read"}}}
    path.write_text(json.dumps(doc))
    assert run(capsys, "policy", "fmt", str(path))[0] == 0
    assert path.read_text() == (
        'path "secret/*" {\n  capabilities = ["read"]\n}\n\n'
        'path "sys/mounts" {\n  policy = "read"\n}\n'
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'path "x" { capabilities = ["read" }',
            'Error parsing policy: failed to parse policy "p": line 1, column',
        ),
        ('path "x" { capabilities = ["fly"] }', 'Error parsing policy: failed to parse policy "p"'),
        ('path "x" {\n  capabilities = ["read", # why\n "list"]\n}', "cannot be kept"),
    ],
)
def test_fmt_refuses_and_leaves_the_file(
    local: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = local / "p.hcl"
    path.write_text(text)
    code, out, err = run(capsys, "policy", "fmt", str(path))
    assert (code, out) == (1, "")
    assert message in err
    assert path.read_text() == text


def test_fmt_missing_file(local: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "policy", "fmt", str(local / "nope.hcl"))
    assert code == 1
    assert err.startswith("Error reading ")


def test_format_hcl_keeps_repeats_order_and_heredocs() -> None:
    text = (
        'path "b" { capabilities = ["deny"] }\n'
        'path "a" { capabilities = ["read"] }\n'
        'path "b" { capabilities = ["list"] }\n'
        'path "c" { comment = <<EOT\nline one\nline two\nEOT\n}\n'
    )
    assert format_hcl(text) == (
        'path "b" {\n  capabilities = ["deny"]\n}\n\n'
        'path "a" {\n  capabilities = ["read"]\n}\n\n'
        'path "b" {\n  capabilities = ["list"]\n}\n\n'
        'path "c" {\n  comment = <<EOT\nline one\nline two\nEOT\n}\n'
    )


def test_format_hcl_errors() -> None:
    with pytest.raises(HclFormatError, match="invalid JSON"):
        format_hcl('{"path": ')
    with pytest.raises(HclFormatError, match="null"):
        format_hcl('{"x": null}')
