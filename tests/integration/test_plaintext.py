"""Secrets, tokens and unseal keys never reach the disk or the logs in the clear."""

from __future__ import annotations

import base64
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

if TYPE_CHECKING:
    from harness.server import CofferFactory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def encodings(secret: bytes) -> dict[str, bytes]:
    """Spellings of ``secret`` a careless implementation might store or log."""
    found = {
        "raw": secret,
        "hex": secret.hex().encode(),
        "HEX": secret.hex().upper().encode(),
        "json-escaped": secret.decode("latin-1").encode("unicode_escape"),
    }
    # base64 of the secret embedded at any offset: drop the edge groups that
    # also depend on the neighbouring bytes.
    for offset in range(3):
        for name, encode in (("b64", base64.b64encode), ("b64url", base64.urlsafe_b64encode)):
            encoded = encode(b"\0" * offset + secret + b"\0\0\0")
            inner = encoded[4 + (4 if offset else 0) : -8]
            if len(inner) >= 12:
                found[f"{name}@{offset}"] = inner
    return found


def files_under(root: Path) -> list[Path]:
    found = []
    for folder, _dirs, names in os.walk(root):
        found.extend(Path(folder, name) for name in names)
    return found


def leaks(haystacks: dict[str, bytes], secrets: dict[str, bytes]) -> list[str]:
    """``"<where>: <secret> as <encoding>"`` for every spelling found anywhere."""
    problems = []
    for label, secret in secrets.items():
        for encoding, needle in encodings(secret).items():
            for where, hay in haystacks.items():
                if needle in hay:
                    problems.append(f"{where}: {label} as {encoding}")
    return problems


def test_no_plaintext_on_disk_or_in_logs(coffer: CofferFactory, tmp_path: Path) -> None:
    marker = f"PLAINTEXT-MARKER-{uuid.uuid4().hex}"
    path_marker = f"pathmarker-{uuid.uuid4().hex[:12]}"
    bad_token = f"hvs.BADTOKEN{uuid.uuid4().hex[:16]}"
    data_dir = tmp_path / "data"
    server = coffer.file_server(data_dir, log_level="trace").start()

    init = server.init(5, 3)
    keys_hex, keys_b64, root = init["keys"], init["keys_base64"], init["root_token"]
    server.unseal(keys_b64[:3])

    # The marker in values of every shape; the path marker only in a secret's path.
    secrets_written = {
        "plain/one": {"password": marker},
        "plain/two": {"nested": {"list": [marker, 1, {"deep": f"prefix-{marker}-suffix"}]}},
        "plain/three": {marker: "marker as a field name"},
        "plain/big": {"blob": ("x" * 1000 + marker) * 64},
        "plain/unicode": {"v": f"\u00fc\u00f1\u00ee{marker}\u2603"},
        f"plain/{path_marker}": {"v": marker},
    }
    for name, data in secrets_written.items():
        server.kv_put(root, name, data)
        server.kv_put(root, name, data)  # a second version of each
    assert server.request("PUT", "/v1/sys/rotate", token=root).status in (200, 204)
    # Accessors are salted at rest too (issue 14, item 7): no file is named after one.
    made = server.request("POST", "/v1/auth/token/create", {}, token=root)
    assert made.status == 200, made
    accessors = {"child accessor": made.json["auth"]["accessor"].encode()}
    looked = server.request("GET", "/v1/auth/token/lookup-self", token=root)
    accessors["root accessor"] = looked.json["data"]["accessor"].encode()
    server.kv_put(root, "plain/after-rotate", {"v": marker})
    for name, data in secrets_written.items():
        assert server.kv_get(root, name) == data
    assert server.kv_get(root, "plain/after-rotate") == {"v": marker}

    # Requests that fail, carrying the secret, tokens and keys in various places.
    assert server.request("GET", "/v1/secret/data/plain/one", token=bad_token).status == 403
    assert (
        server.request(
            "GET", "/v1/sys/mounts", headers={"Authorization": f"Bearer {bad_token}"}
        ).status
        == 403
    )
    assert server.request("PUT", "/v1/secret/data/x", {"data": {"v": marker}}).status == 403
    bad_json = server.request(
        "PUT", "/v1/secret/data/x", token=root, raw_body=f'{{"data": "{marker}'.encode()
    )
    assert bad_json.status == 400, bad_json
    wrong_type = server.request("PUT", "/v1/secret/data/x", {"data": marker}, token=root)
    assert wrong_type.status == 400, wrong_type
    assert server.request("GET", f"/v1/secret/data/missing?x={marker}", token=root).status == 404
    assert server.request("PUT", "/v1/sys/unseal", {"key": keys_hex[0]}).status == 200
    assert server.request("PUT", "/v1/sys/init", {"secret_shares": 1}).status == 400
    assert server.request("GET", "/v1/sys/mounts", token=root).status == 200
    assert server.request("PUT", "/v1/sys/seal", token=root).status in (200, 204)
    assert server.request("GET", "/v1/secret/data/plain/one", token=root).status == 503
    for key in (keys_hex[0], keys_b64[1], "00" * 33):
        server.request("PUT", "/v1/sys/unseal", {"key": key})
    assert server.stop() == 0

    # -- the data directory at rest ---------------------------------------------------------
    files = files_under(tmp_path / "data")
    contents = {f"content of {p.relative_to(tmp_path)}": p.read_bytes() for p in files}
    names = {
        f"name {p.relative_to(tmp_path)}": str(p.relative_to(tmp_path)).encode() for p in files
    }
    # Sanity: the walk sees the secrets' files and reads plaintext where it exists.
    assert any(path_marker in name for name in names), sorted(names)
    seal_config = [c for n, c in contents.items() if n.endswith("_seal-config")]
    assert seal_config and b"secret_threshold" in seal_config[0]
    assert sum(len(c) for c in contents.values()) > 64 * 1000  # the big secret is in there

    value_secrets = {"marker": marker.encode(), "root token": root.encode()}
    key_secrets = {}
    for index, (hex_key, b64_key) in enumerate(zip(keys_hex, keys_b64, strict=True)):
        key_secrets[f"key {index} hex"] = hex_key.encode()
        key_secrets[f"key {index} base64"] = b64_key.encode()
        key_secrets[f"key {index} bytes"] = bytes.fromhex(hex_key)
    haystacks = {**contents, **names}
    assert len(haystacks) == 2 * len(files) > 10
    on_disk = leaks(haystacks, {**value_secrets, **key_secrets})
    quoted = {"marker url-quoted": quote(marker, safe="").encode()}
    on_disk += leaks(names, quoted)
    on_disk += leaks(haystacks, accessors)
    assert not on_disk, on_disk

    # -- the logs -------------------------------------------------------------------
    stderr, stdout = server.stderr_path.read_bytes(), server.stdout_path.read_bytes()
    events = server.log_events()
    # Sanity: the failing requests were logged, so the scan covers them.
    statuses = {e.get("status") for e in events if e.get("event") == "http.request"}
    assert {200, 400, 403, 404, 503} <= statuses, statuses
    log_secrets = {**value_secrets, **key_secrets, "bad token": bad_token.encode()}
    in_logs = leaks({"stderr": stderr, "stdout": stdout}, log_secrets)
    assert not in_logs, in_logs
