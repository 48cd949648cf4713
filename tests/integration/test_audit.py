"""Audit devices end to end: real ``coffer server -dev`` processes, real files and sockets.

The lines of a login, a KV read and a denied request are checked field by
field, their HMACs against ``sys/audit-hash``; fail-closed is checked with a
file that cannot be written and a socket whose listener is gone (the refused
write must not have happened, and the device is used again once it
recovers); rotation by rename and SIGHUP must lose no line; and the whole log
is scanned for plaintext secrets and tokens.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness.process import coffer_command
from harness.server import CofferFactory, ServerProcess
from node.audit.lines import AuditLine, parse_log
from tests.integration.conftest import no_proxy_env
from tests.support.line_listener import listening

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

PASSWORD = "correct-horse-" + secrets.token_hex(4)
SECRET = "api-key-" + secrets.token_hex(8)


def _server(coffer: CofferFactory) -> tuple[ServerProcess, str]:
    root = "root-" + secrets.token_hex(8)
    server = coffer.dev_server(root).start(wait=False)
    server.wait_ready(healthy=True)
    return server, root


def _ok(server: ServerProcess, method: str, path: str, body: Any = None, token: str = "") -> Any:
    reply = server.request(method, path, body, token=token or None)
    assert reply.status in (200, 204), reply
    return reply.json if reply.status == 200 else None


def _hash(server: ServerProcess, root: str, device: str, value: str) -> str:
    reply = _ok(server, "POST", f"/v1/sys/audit-hash/{device}", {"input": value}, root)
    digest: str = reply["data"]["hash"]
    assert reply["hash"] == digest
    assert digest.startswith("hmac-sha256:") and len(digest) == 12 + 64
    return digest


def _cli(server: ServerProcess, root: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**no_proxy_env(), "COFFER_ADDR": server.base_url, "COFFER_TOKEN": root}
    return subprocess.run(
        [*coffer_command(), *args], capture_output=True, text=True, env=env, timeout=30, check=False
    )


def _lines(path: Path) -> list[AuditLine]:
    return list(parse_log(path.read_text(encoding="utf-8")))


def _one(lines: list[AuditLine], kind: str, **request: Any) -> AuditLine:
    found = [
        line
        for line in lines
        if line.type == kind and all(line.request.get(k) == v for k, v in request.items())
    ]
    assert len(found) == 1, (kind, request, [line.entry for line in lines])
    return found[0]


def test_login_read_and_denied_lines(coffer: CofferFactory, tmp_path: Path) -> None:
    server, root = _server(coffer)
    log_path = tmp_path / "audit.log"
    enabled = _cli(server, root, "audit", "enable", "file", f"file_path={log_path}")
    assert enabled.returncode == 0, enabled
    assert enabled.stdout.strip() == "Success! Enabled the file audit device at: file/"
    listed = _cli(server, root, "audit", "list", "-detailed")
    assert listed.returncode == 0, listed
    assert f"file/    file    n/a            replicated     file_path={log_path}" in listed.stdout

    _ok(server, "POST", "/v1/sys/auth/userpass", {"type": "userpass"}, root)
    user = {"password": PASSWORD, "token_policies": "default"}
    _ok(server, "POST", "/v1/auth/userpass/users/alice", user, root)
    _ok(server, "PUT", "/v1/secret/data/app", {"data": {"api_key": SECRET}}, root)
    login = _ok(server, "POST", "/v1/auth/userpass/login/alice", {"password": PASSWORD})
    alice, alice_accessor = login["auth"]["client_token"], login["auth"]["accessor"]
    read = _ok(server, "GET", "/v1/secret/data/app", token=root)
    assert read["data"]["data"] == {"api_key": SECRET}
    denied = server.request("GET", "/v1/secret/data/app", token=alice)
    assert denied.status == 403, denied
    bogus = "not-a-token-" + secrets.token_hex(4)
    refused = server.request("PUT", "/v1/secret/data/app", {"data": {"x": SECRET}}, token=bogus)
    assert refused.status == 403, refused

    hashed = {v: _hash(server, root, "file", v) for v in (PASSWORD, SECRET, alice, root)}
    lines = _lines(log_path)

    # The login: the password hashed in the request, the new token and accessor in the response.
    login_path = "auth/userpass/login/alice"
    request = _one(lines, "request", path=login_path)
    assert list(request.entry) == ["time", "type", "auth", "request"]
    assert request.auth == {}
    assert request.request["operation"] == "update"
    assert request.request["mount_type"] == "userpass"
    assert request.request["mount_point"] == "auth/userpass/"
    assert request.request["namespace"] == {"id": "root"}
    assert request.request["data"] == {"password": hashed[PASSWORD]}
    assert request.request["remote_address"] == "127.0.0.1"
    response = _one(lines, "response", path=login_path)
    assert list(response.entry) == ["time", "type", "auth", "request", "response"]
    auth = response.response["auth"]  # type: ignore[index]
    assert auth["client_token"] == hashed[alice]
    assert auth["accessor"] == _hash(server, root, "file", alice_accessor)
    assert auth["display_name"] == "userpass-alice"
    assert auth["policies"] == ["default"] and auth["token_policies"] == ["default"]
    assert auth["metadata"] == {"username": "alice"}
    assert request.request["id"] == response.request["id"] != ""

    # The KV read: who asked (root, hashed), and the secret hashed in the response.
    read_request = _one(
        lines, "request", path="secret/data/app", operation="read", id=read_id(lines, root, hashed)
    )
    assert read_request.auth["client_token"] == hashed[root]
    assert read_request.auth["policies"] == ["root"]
    assert read_request.auth["display_name"] == "root"
    assert read_request.request["client_token"] == hashed[root]
    read_response = _one(lines, "response", id=read_request.request["id"])
    assert read_response.response["data"]["data"] == {"api_key": hashed[SECRET]}  # type: ignore[index]
    assert read_response.response["data"]["metadata"]["version"] == 1  # type: ignore[index]
    assert "error" not in read_response.entry

    # The denied read: logged with its error, who asked, and a response entry.
    denied_request = [
        line
        for line in lines
        if line.type == "request" and line.request.get("client_token") == hashed[alice]
    ]
    assert len(denied_request) == 1, denied_request
    entry = denied_request[0]
    assert entry.error == "permission denied"
    assert entry.request["path"] == "secret/data/app"
    assert entry.auth["display_name"] == "userpass-alice"
    assert entry.auth["policies"] == ["default"]
    denied_response = _one(lines, "response", id=entry.request["id"])
    assert denied_response.error == "permission denied"
    assert denied_response.response == {}

    # Refused before routing (no live token): both entries, without the unread body.
    hashed_bogus = _hash(server, root, "file", bogus)
    bogus_lines = [line for line in lines if line.request.get("client_token") == hashed_bogus]
    assert [(line.type, line.error) for line in bogus_lines] == [
        ("request", "permission denied"),
        ("response", "permission denied"),
    ]
    assert bogus_lines[0].auth == {} and "data" not in bogus_lines[0].request
    assert bogus_lines[0].request["path"] == "secret/data/app"
    assert bogus_lines[0].request["operation"] == "update"

    # No secret, password, token or accessor in plaintext anywhere in the file.
    text = log_path.read_text(encoding="utf-8")
    root_accessor = _ok(server, "GET", "/v1/auth/token/lookup-self", token=root)["data"]["accessor"]
    for plain in (PASSWORD, SECRET, alice, root, alice_accessor, root_accessor, bogus):
        assert plain not in text

    disabled = _cli(server, root, "audit", "disable", "file")
    assert disabled.returncode == 0, disabled
    assert "Success! Disabled audit device (if it was enabled) at: file/" in disabled.stdout
    empty = _cli(server, root, "audit", "list")
    assert empty.returncode == 2 and "No audit devices are enabled." in empty.stdout, empty
    size = log_path.stat().st_size
    _ok(server, "GET", "/v1/secret/data/app", token=root)
    assert log_path.stat().st_size == size  # disabled: nothing more is written


def read_id(lines: list[AuditLine], root: str, hashed: dict[str, str]) -> str:
    """The id of root's (one) KV read of secret/data/app."""
    ids = [
        line.request["id"]
        for line in lines
        if line.type == "request"
        and line.request["path"] == "secret/data/app"
        and line.request["operation"] == "read"
        and line.request.get("client_token") == hashed[root]
    ]
    assert len(ids) == 1, ids
    return str(ids[0])


def test_enable_needs_sudo_and_checks_options(coffer: CofferFactory, tmp_path: Path) -> None:
    server, root = _server(coffer)
    _ok(
        server,
        "PUT",
        "/v1/sys/policy/writer",
        {"policy": 'path "sys/*" { capabilities = ["create", "update", "read", "delete"] }'},
        root,
    )
    token = _ok(server, "POST", "/v1/auth/token/create", {"policies": ["writer"]}, root)
    writer = token["auth"]["client_token"]
    body = {"type": "file", "options": {"file_path": str(tmp_path / "a.log")}}
    assert server.request("PUT", "/v1/sys/audit/file", body, token=writer).status == 403
    assert server.request("GET", "/v1/sys/audit", token=writer).status == 403
    for bad, message in (
        ({"type": "tape"}, "unknown backend type"),
        ({"type": "file"}, "file_path is required"),
        ({"type": "file", "options": {"file_path": "x", "colour": "red"}}, "unknown options"),
        ({"type": "file", "options": {"file_path": "x", "log_raw": "maybe"}}, "log_raw"),
        ({"type": "socket", "options": {"address": "x:1", "socket_type": "sctp"}}, "socket_type"),
        ({"type": "socket", "options": {"address": "nowhere"}}, "host:port"),
        ({"type": "syslog", "options": {"facility": "NOPE"}}, "facility"),
        ({"type": "file", "options": {"file_path": str(tmp_path / "no" / "dir.log")}}, "sanity"),
    ):
        reply = server.request("PUT", "/v1/sys/audit/bad", bad, token=root)
        assert reply.status == 400, reply
        assert message in " ".join(reply.errors), reply
    _ok(server, "PUT", "/v1/sys/audit/file", body, root)
    clash = server.request(
        "PUT",
        "/v1/sys/audit/file/nested",
        {"type": "file", "options": {"file_path": str(tmp_path / "b.log")}},
        token=root,
    )
    assert clash.status == 400 and "path already in use" in " ".join(clash.errors), clash
    assert (
        server.request("POST", "/v1/sys/audit-hash/nope", {"input": "x"}, token=root).status == 400
    )
    assert server.request("GET", "/v1/sys/audit", token=root).json["data"]["file/"]["options"] == {
        "file_path": str(tmp_path / "a.log")
    }


def test_fail_closed_with_an_unwritable_file(coffer: CofferFactory, tmp_path: Path) -> None:
    server, root = _server(coffer)
    log_path = tmp_path / "audit.log"
    _ok(
        server,
        "PUT",
        "/v1/sys/audit/file",
        {"type": "file", "options": {"file_path": str(log_path)}},
        root,
    )
    _ok(server, "PUT", "/v1/secret/data/fc", {"data": {"v": "before"}}, root)

    # The file's place becomes a directory: after SIGHUP the device cannot open it.
    log_path.rename(tmp_path / "audit.log.1")
    log_path.mkdir()
    server.send_signal(signal.SIGHUP)
    _wait_for_status(server, 500, "GET", "/v1/secret/data/fc", None, root)
    refused = server.request("PUT", "/v1/secret/data/fc", {"data": {"v": "refused"}}, token=root)
    assert refused.status == 500, refused
    assert "audit" in " ".join(refused.errors), refused

    # The device recovers once the path can be written again; the refused write never happened.
    log_path.rmdir()
    reply = server.request("GET", "/v1/secret/data/fc", token=root)
    assert reply.status == 200, reply
    assert reply.json["data"]["data"] == {"v": "before"}
    assert reply.json["data"]["metadata"]["version"] == 1
    assert [line.type for line in _lines(log_path)] == ["request", "response"]
    assert "audit.device_failed" in server.stderr_text()


def _wait_for_status(
    server: ServerProcess, status: int, method: str, path: str, body: Any, token: str
) -> Any:
    """The first reply with ``status`` (SIGHUP is handled asynchronously by the server)."""
    deadline = time.monotonic() + 10
    while True:
        reply = server.request(method, path, body, token=token)
        if reply.status == status or time.monotonic() > deadline:
            assert reply.status == status, reply
            return reply
        time.sleep(0.05)


def test_fail_closed_with_a_socket_whose_listener_is_gone(coffer: CofferFactory) -> None:
    server, root = _server(coffer)
    with listening() as listener:
        options = {"address": f"127.0.0.1:{listener.port}", "socket_type": "tcp"}
        _ok(server, "PUT", "/v1/sys/audit/net", {"type": "socket", "options": options}, root)
        _ok(server, "PUT", "/v1/secret/data/sock", {"data": {"v": "before"}}, root)
        _wait(lambda: len(listener.lines) >= 2, "the write's lines at the listener")
        port = listener.port
    time.sleep(0.2)  # the server's end sees the connection closed

    refused = server.request("PUT", "/v1/secret/data/sock", {"data": {"v": "refused"}}, token=root)
    assert refused.status == 500, refused

    with listening(port) as again:
        reply = server.request("GET", "/v1/secret/data/sock", token=root)
        assert reply.status == 200, reply
        assert reply.json["data"]["data"] == {"v": "before"}  # the refused write never happened
        _wait(lambda: len(again.lines) >= 2, "the read's lines at the new listener")
        kinds = [parse_log(line.decode()) for line in again.lines]
        assert [next(k).type for k in kinds][:2] == ["request", "response"]


def _wait(check: Any, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_rotation_by_rename_and_sighup_loses_no_line(coffer: CofferFactory, tmp_path: Path) -> None:
    server, root = _server(coffer)
    log_path = tmp_path / "audit.log"
    body = {"type": "file", "options": {"file_path": str(log_path), "mode": "0640"}}
    _ok(server, "PUT", "/v1/sys/audit/file", body, root)
    assert log_path.stat().st_mode & 0o777 == 0o640
    ids: list[str] = []

    def some_requests(count: int) -> None:
        for number in range(count):
            reply = _ok(
                server, "PUT", f"/v1/secret/data/r{len(ids)}", {"data": {"n": number}}, root
            )
            ids.append(str(reply and reply["request_id"]))

    some_requests(5)
    rotated = tmp_path / "audit.log.1"
    os.rename(log_path, rotated)
    some_requests(5)  # still into the renamed file: nothing reopened it yet
    server.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while not log_path.exists():
        assert time.monotonic() < deadline, "SIGHUP did not reopen the audit file"
        some_requests(1)
    some_requests(5)

    old, new = _lines(rotated), _lines(log_path)
    assert old and new
    seen = [line.request["id"] for line in old + new if line.request["path"].startswith("secret/")]
    # Every request and every response of every write, once, in order.
    assert seen == [i for i in ids for _ in range(2)]


def test_syslog_device_writes_datagrams(coffer: CofferFactory, tmp_path: Path) -> None:
    server, root = _server(coffer)
    address = str(tmp_path / "log.sock")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(address)
    receiver.settimeout(10)
    try:
        options = {"address": address, "facility": "LOCAL0", "tag": "coffer-test"}
        _ok(server, "PUT", "/v1/sys/audit/syslog", {"type": "syslog", "options": options}, root)
        _ok(server, "GET", "/v1/sys/mounts", token=root)
        message = receiver.recv(65536).decode()
        receiver.close()
        assert message.startswith(f"<{16 * 8 + 6}>coffer-test[{server.pid}]: "), message
        line = next(parse_log(message.split(": ", 1)[1]))
        assert line.type == "request" and line.request["path"] == "sys/mounts"
        # The listener is gone: nothing records, so requests are refused.
        assert server.request("GET", "/v1/sys/mounts", token=root).status == 500
    finally:
        receiver.close()
