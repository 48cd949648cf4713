"""``coffer kv ...`` against the recording fake server: version detection, paths, output."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.fakes import FakeServer, run, serving

META: dict[str, Any] = {
    "created_time": "2024-01-01T00:00:00Z",
    "custom_metadata": None,
    "deletion_time": "",
    "destroyed": False,
    "version": 3,
}
SECRET: dict[str, Any] = {
    "request_id": "r-1",
    "lease_id": "",
    "renewable": False,
    "lease_duration": 0,
    "data": {"data": {"user": "admin", "password": "hunter2"}, "metadata": META},
    "wrap_info": None,
    "warnings": None,
    "auth": None,
}
METADATA_TABLE = [
    "======= Metadata =======",
    "Key                Value",
    "---                -----",
    "created_time       2024-01-01T00:00:00Z",
    "custom_metadata    <nil>",
    "deletion_time      n/a",
    "destroyed          false",
    "version            3",
]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeServer]:
    with serving(monkeypatch, tmp_path, token="root-token") as fake:
        yield fake


def mount(
    server: FakeServer, path: str, mount_path: str = "secret/", version: str | None = "2"
) -> None:
    """Answer the preflight for ``path`` like Vault's sys/internal/ui/mounts."""
    options = {"version": version} if version else None
    server.on(
        "GET",
        f"/v1/sys/internal/ui/mounts/{path}",
        {"data": {"path": mount_path, "type": "kv", "options": options}},
    )


# --- version detection ---------------------------------------------------------------------------


def test_preflight_is_the_ui_mounts_endpoint_and_never_wrapped(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mount(server, "secret/app")
    server.on("GET", "/v1/secret/data/app", SECRET)
    code, _, err = run(capsys, "kv", "get", "-wrap-ttl=5m", "secret/app")
    assert (code, err) == (0, "")
    preflight, read = server.requests
    assert (preflight.method, preflight.path) == ("GET", "/v1/sys/internal/ui/mounts/secret/app")
    assert "x-service-wrap-ttl" not in preflight.headers
    assert preflight.headers["x-service-token"] == "root-token"
    assert read.headers["x-service-wrap-ttl"] == "5m"


def test_fallback_to_sys_mounts_picks_the_longest_mount(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", "/v1/sys/internal/ui/mounts/team/a/app", {"errors": []}, status=404)
    mounts = {
        "team/": {"type": "kv", "options": {"version": "2"}},
        "team/a/": {"type": "kv", "options": None},
        "sys/": {"type": "system", "options": None},
    }
    server.on("GET", "/v1/sys/mounts", {**mounts, "data": mounts})
    server.on("GET", "/v1/team/a/app", {"data": {"k": "v"}})
    code, out, _ = run(capsys, "kv", "get", "team/a/app")
    assert code == 0
    assert server.calls() == [
        ("GET", "/v1/sys/internal/ui/mounts/team/a/app"),
        ("GET", "/v1/sys/mounts"),
        ("GET", "/v1/team/a/app"),
    ]
    assert out.splitlines() == ["== Data ==", "Key    Value", "---    -----", "k      v"]


def test_kv_v2_type_counts_as_version_2(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", "/v1/sys/internal/ui/mounts/kv2/app", {"errors": []}, status=405)
    server.on("GET", "/v1/sys/mounts", {"data": {"kv2/": {"type": "kv-v2", "options": None}}})
    server.on("GET", "/v1/kv2/data/app", SECRET)
    assert run(capsys, "kv", "get", "kv2/app")[0] == 0
    assert server.last().path == "/v1/kv2/data/app"


def test_forbidden_everywhere_assumes_v2_at_the_first_segment(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    denied = {"errors": ["permission denied"]}
    server.on("GET", "/v1/sys/internal/ui/mounts/secret/app/db", denied, status=403)
    server.on("GET", "/v1/sys/mounts", denied, status=403)
    server.on("GET", "/v1/secret/data/app/db", SECRET)
    code, _, err = run(capsys, "kv", "get", "secret/app/db")
    assert (code, err) == (0, "")
    assert server.last().path == "/v1/secret/data/app/db"


def test_preflight_server_error_is_reported(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.on("GET", "/v1/sys/internal/ui/mounts/secret/app", {"errors": ["sealed"]}, status=503)
    code, out, err = run(capsys, "kv", "get", "secret/app")
    assert (code, out) == (2, "")
    assert err.startswith("Error determining the KV version of secret/app: Error making API")
    assert "* sealed" in err


def test_mount_flag_makes_the_path_relative(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mount(server, "secret")
    server.on("GET", "/v1/secret/data/app/db", SECRET)
    code, out, _ = run(capsys, "kv", "get", "-mount=secret/", "-field=user", "app/db")
    assert (code, out) == (0, "admin\n")
    assert server.calls()[0] == ("GET", "/v1/sys/internal/ui/mounts/secret")


# --- get -----------------------------------------------------------------------------------------


def test_get_table_like_vault(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/app")
    server.on("GET", "/v1/secret/data/app", SECRET)
    code, out, err = run(capsys, "kv", "get", "secret/app")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "= Secret Path =",
        "secret/data/app",
        "",
        *METADATA_TABLE,
        "",
        "====== Data ======",
        "Key         Value",
        "---         -----",
        "password    hunter2",
        "user        admin",
    ]


def test_get_version_json_and_fields(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mount(server, "secret/app")
    server.on("GET", "/v1/secret/data/app?version=2", SECRET)
    code, out, _ = run(capsys, "kv", "get", "-version=2", "-format=json", "secret/app")
    assert code == 0
    assert json.loads(out) == SECRET
    assert run(capsys, "kv", "get", "-version=2", "-field=password", "secret/app")[1] == (
        "hunter2\n"
    )
    # -field=data is the whole data map when the secret has no "data" key.
    code, out, _ = run(capsys, "kv", "get", "-version=2", "-field=data", "secret/app")
    assert out == "map[password:hunter2 user:admin]\n"
    code, out, _ = run(
        capsys, "kv", "get", "-version=2", "-field=data", "-format=json", "secret/app"
    )
    assert json.loads(out) == {"user": "admin", "password": "hunter2"}
    code, _, err = run(capsys, "kv", "get", "-version=2", "-field=nope", "secret/app")
    assert (code, err) == (2, 'Field "nope" not present in secret\n')


def test_get_missing_secret(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/nope")
    code, out, err = run(capsys, "kv", "get", "secret/nope")
    assert (code, out, err) == (2, "", "No value found at secret/data/nope\n")


def test_get_deleted_version_shows_its_metadata(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mount(server, "secret/app")
    deleted = {**META, "deletion_time": "2024-01-02T00:00:00Z"}
    body = {**SECRET, "data": {"data": None, "metadata": deleted}, "errors": []}
    server.on("GET", "/v1/secret/data/app", body, status=404)
    code, out, _ = run(capsys, "kv", "get", "secret/app")
    assert code == 0
    assert "deletion_time      2024-01-02T00:00:00Z" in out
    assert "Data" not in out
    code, _, err = run(capsys, "kv", "get", "-field=user", "secret/app")
    assert (code, err) == (2, "No data found at secret/data/app\n")


def test_get_v1(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "kv/app", "kv/", version=None)
    server.on("GET", "/v1/kv/app", {"data": {"ttl": 90, "a": "b"}, "lease_duration": 60})
    code, out, _ = run(capsys, "kv", "get", "kv/app")
    assert code == 0
    # TTL-like keys print as durations, as Vault does.
    assert out.splitlines() == [
        "=== Data ===",
        "Key    Value",
        "---    -----",
        "a      b",
        "ttl    1m30s",
    ]
    code, _, err = run(capsys, "kv", "get", "-version=1", "kv/app")
    assert (code, err) == (2, "Error: -version is not supported on KV version 1\n")


# --- put / patch ---------------------------------------------------------------------------------

WRITTEN = {"request_id": "r-2", "data": META, "wrap_info": None, "warnings": None, "auth": None}


def test_put_v2(
    server: FakeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "pass.txt").write_text("s3cret")
    monkeypatch.setattr("sys.stdin", io.StringIO('{"from_stdin": true}'))
    mount(server, "secret/app")
    server.on("PUT", "/v1/secret/data/app", WRITTEN)
    code, out, err = run(
        capsys, "kv", "put", "-cas=2", "secret/app", "user=admin", f"pass=@{tmp_path}/pass.txt", "-"
    )
    assert (code, err) == (0, "")
    seen = server.last()
    assert seen.body == {
        "data": {"user": "admin", "pass": "s3cret", "from_stdin": True},
        "options": {"cas": 2},
    }
    assert seen.headers["content-type"] == "application/json"
    assert out.splitlines() == ["= Secret Path =", "secret/data/app", "", *METADATA_TABLE]


def test_put_json_field_and_data_after_flags(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mount(server, "secret/app")
    server.on("PUT", "/v1/secret/data/app", WRITTEN)
    code, out, _ = run(capsys, "kv", "put", "secret/app", "a=1", "-format=json", "b=2")
    assert code == 0
    assert json.loads(out) == WRITTEN
    assert server.last().body == {"data": {"a": "1", "b": "2"}}
    assert run(capsys, "kv", "put", "-field=version", "secret/app", "a=1")[1] == "3\n"


def test_put_v1_and_its_limits(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "kv/app", "kv/", version="1")
    server.on("PUT", "/v1/kv/app", None, status=204)
    code, out, _ = run(capsys, "kv", "put", "kv/app", "a=1")
    assert (code, out) == (0, "Success! Data written to: kv/app\n")
    assert server.last().body == {"a": "1"}
    code, _, err = run(capsys, "kv", "put", "-cas=0", "kv/app", "a=1")
    assert (code, err) == (2, "Error: -cas is not supported on KV version 1\n")


def test_put_needs_data(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "kv", "put", "secret/app")
    assert code == 2
    assert "must supply data" in err
    assert server.requests == []


def test_patch_sends_a_merge_patch(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/app")
    server.on("PATCH", "/v1/secret/data/app", WRITTEN)
    code, out, _ = run(
        capsys, "kv", "patch", "-cas=3", "-remove-data=old", "secret/app", "pass=new"
    )
    assert code == 0
    seen = server.last()
    assert seen.method == "PATCH"
    assert seen.headers["content-type"] == "application/merge-patch+json"
    assert seen.body == {"data": {"pass": "new", "old": None}, "options": {"cas": 3}}
    assert out.startswith("= Secret Path =\nsecret/data/app\n")


def test_patch_unsupported_suggests_rw(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mount(server, "secret/app")
    server.on("PATCH", "/v1/secret/data/app", {"errors": ["unsupported operation"]}, status=405)
    code, _, err = run(capsys, "kv", "patch", "secret/app", "a=1")
    assert code == 2
    assert "Code: 405" in err
    assert err.rstrip().endswith("try again with -method=rw.")


def test_patch_missing_secret(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/app")
    code, _, err = run(capsys, "kv", "patch", "secret/app", "a=1")
    assert (code, err) == (2, "No value found at secret/data/app\n")


def test_patch_read_then_write(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/app")
    server.on("GET", "/v1/secret/data/app", SECRET)
    server.on("PUT", "/v1/secret/data/app", WRITTEN)
    code, _, _ = run(
        capsys,
        "kv",
        "patch",
        "-method=rw",
        "-wrap-ttl=1m",
        "-remove-data=user",
        "secret/app",
        "pass=new",
        "extra=1",
    )
    assert code == 0
    _, read, write = server.requests
    assert (read.method, write.method) == ("GET", "PUT")
    assert "x-service-wrap-ttl" not in read.headers  # the pre-read is never wrapped
    assert write.body == {
        "data": {"password": "hunter2", "pass": "new", "extra": "1"},
        "options": {"cas": 3},
    }


def test_patch_is_v2_only(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "kv/app", "kv/", version=None)
    code, _, err = run(capsys, "kv", "patch", "kv/app", "a=1")
    assert (code, err) == (2, "Error: patch is not supported on KV version 1\n")


# --- delete / undelete / destroy / list ----------------------------------------------------------


def test_delete_latest_and_versions(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/app")
    server.on("DELETE", "/v1/secret/data/app", None, status=204)
    server.on("PUT", "/v1/secret/delete/app", None, status=204)
    code, out, _ = run(capsys, "kv", "delete", "secret/app")
    assert (code, out) == (0, "Success! Data deleted (if it existed) at: secret/data/app\n")
    assert server.last().method == "DELETE"
    code, out, _ = run(capsys, "kv", "delete", "-versions=1,2", "-versions", "5", "secret/app")
    assert code == 0
    assert server.last().path == "/v1/secret/delete/app"
    assert server.last().body == {"versions": [1, 2, 5]}


@pytest.mark.parametrize("verb", ["undelete", "destroy"])
def test_undelete_and_destroy(
    server: FakeServer, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    mount(server, "secret/app")
    server.on("PUT", f"/v1/secret/{verb}/app", None, status=204)
    code, out, _ = run(capsys, "kv", verb, "-versions=1,3", "secret/app")
    assert (code, out) == (0, f"Success! Data written to: secret/{verb}/app\n")
    assert server.last().body == {"versions": [1, 3]}
    requests = len(server.requests)
    code, _, err = run(capsys, "kv", verb, "secret/app")
    assert code == 2
    assert "-versions" in err
    assert len(server.requests) == requests  # nothing sent
    code, _, err = run(capsys, "kv", verb, "-versions=x", "secret/app")
    assert (code, err) == (2, "Error: invalid version 'x' in -versions\n")


def test_list(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/dir")
    mount(server, "secret")
    server.on("LIST", "/v1/secret/metadata/dir/", {"data": {"keys": ["a", "b/"]}})
    server.on("LIST", "/v1/secret/metadata/", {"data": {"keys": ["dir/"]}})
    code, out, _ = run(capsys, "kv", "list", "secret/dir")
    assert (code, out) == (0, "Keys\n----\na\nb/\n")
    assert json.loads(run(capsys, "kv", "list", "-format=json", "secret/dir")[1]) == ["a", "b/"]
    assert run(capsys, "kv", "list", "-mount=secret")[1] == "Keys\n----\ndir/\n"
    mount(server, "secret/empty")
    code, _, err = run(capsys, "kv", "list", "secret/empty")
    assert (code, err) == (2, "No value found at secret/metadata/empty\n")


# --- metadata ------------------------------------------------------------------------------------

METADATA: dict[str, Any] = {
    "data": {
        "cas_required": False,
        "created_time": "2024-01-01T00:00:00Z",
        "current_version": 2,
        "custom_metadata": {"owner": "ops"},
        "delete_version_after": "0s",
        "max_versions": 0,
        "oldest_version": 1,
        "updated_time": "2024-01-02T00:00:00Z",
        "versions": {
            "10": {"created_time": "t10", "deletion_time": "", "destroyed": False},
            "2": {"created_time": "t2", "deletion_time": "", "destroyed": True},
        },
    }
}


def test_metadata_get(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/app")
    server.on("GET", "/v1/secret/metadata/app", METADATA)
    code, out, _ = run(capsys, "kv", "metadata", "get", "secret/app")
    assert code == 0
    assert out.splitlines() == [
        "== Metadata Path ==",
        "secret/metadata/app",
        "",
        "========== Metadata ==========",
        "Key                     Value",
        "---                     -----",
        "cas_required            false",
        "created_time            2024-01-01T00:00:00Z",
        "current_version         2",
        "custom_metadata         map[owner:ops]",
        "delete_version_after    0s",
        "max_versions            0",
        "oldest_version          1",
        "updated_time            2024-01-02T00:00:00Z",
        "",
        "====== Version 2 ======",
        "Key              Value",
        "---              -----",
        "created_time     t2",
        "deletion_time    n/a",
        "destroyed        true",
        "",
        "===== Version 10 =====",
        "Key              Value",
        "---              -----",
        "created_time     t10",
        "deletion_time    n/a",
        "destroyed        false",
    ]
    assert json.loads(run(capsys, "kv", "metadata", "get", "-format=json", "secret/app")[1]) == (
        METADATA
    )


def test_metadata_put_and_delete(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "secret/app")
    server.on("PUT", "/v1/secret/metadata/app", None, status=204)
    server.on("DELETE", "/v1/secret/metadata/app", None, status=204)
    code, out, _ = run(
        capsys,
        "kv",
        "metadata",
        "put",
        "-max-versions=5",
        "-cas-required",
        "-delete-version-after=1h",
        "-custom-metadata=owner=ops",
        "-custom-metadata=tier=1",
        "secret/app",
    )
    assert (code, out) == (0, "Success! Data written to: secret/metadata/app\n")
    assert server.last().body == {
        "max_versions": 5,
        "cas_required": True,
        "delete_version_after": "1h",
        "custom_metadata": {"owner": "ops", "tier": "1"},
    }
    run(capsys, "kv", "metadata", "put", "-cas-required=false", "secret/app")
    assert server.last().body == {"cas_required": False}
    code, out, _ = run(capsys, "kv", "metadata", "delete", "secret/app")
    assert (code, out) == (0, "Success! Data deleted (if it existed) at: secret/metadata/app\n")
    code, _, err = run(capsys, "kv", "metadata", "put", "-custom-metadata=x", "secret/app")
    assert (code, err) == (2, "Error: invalid -custom-metadata value 'x': expected key=value\n")


def test_metadata_is_v2_only(server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    mount(server, "kv/app", "kv/", version="1")
    code, _, err = run(capsys, "kv", "metadata", "get", "kv/app")
    assert (code, err) == (2, "Error: Metadata is not supported on KV version 1\n")


def test_wrapped_kv_get_prints_the_wrapping_token(
    server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mount(server, "secret/app")
    wrapped = {
        **SECRET,
        "data": None,
        "wrap_info": {
            "token": "hvs.wrap",
            "accessor": "acc",
            "ttl": 300,
            "creation_time": "2024-01-01T00:00:00Z",
            "creation_path": "secret/data/app",
            "wrapped_accessor": "",
        },
    }
    server.on("GET", "/v1/secret/data/app", wrapped)
    code, out, _ = run(capsys, "kv", "get", "-wrap-ttl=5m", "secret/app")
    assert code == 0
    assert out.splitlines() == [
        "Key                              Value",
        "---                              -----",
        "wrapping_token:                  hvs.wrap",
        "wrapping_accessor:               acc",
        "wrapping_token_ttl:              5m",
        "wrapping_token_creation_time:    2024-01-01T00:00:00Z",
        "wrapping_token_creation_path:    secret/data/app",
    ]
    out = run(capsys, "kv", "get", "-wrap-ttl=5m", "-field=wrapping_token", "secret/app")[1]
    assert out == "hvs.wrap\n"
    out = run(capsys, "kv", "get", "-wrap-ttl=5m", "-format=json", "secret/app")[1]
    assert json.loads(out)["wrap_info"]["token"] == "hvs.wrap"
