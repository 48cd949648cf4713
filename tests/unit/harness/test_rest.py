"""``harness.rest`` against a real ``http.server`` on loopback: what is sent, what comes
back, and a kept-alive session that reconnects only when it must."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness.rest import Session, call, fetch


class _Echo(BaseHTTPRequestHandler):
    """Answers every request with what it received, and the client's port."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, Any]]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        record = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "client_port": self.client_address[1],
        }
        self.seen.append(record)
        if self.path == "/text":
            payload, kind = b"not json", "text/plain"
        else:
            payload, kind = json.dumps(record).encode(), "application/json"
        self.send_response(418 if self.path.startswith("/teapot") else 200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-Coffer-Node", "node7")
        if self.path == "/close":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    handler = type("Handler", (_Echo,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_json_body_and_a_token_are_sent_and_any_status_is_a_reply(
    echo: tuple[int, list[dict[str, Any]]],
) -> None:
    port, seen = echo
    reply = fetch(
        "PUT",
        f"http://127.0.0.1:{port}/teapot?x=1",
        {"k": "v"},
        timeout=5,
        token="t0k",
        token_header="X-Vault-Token",
    )

    assert reply.status == 418
    assert reply.headers["x-coffer-node"] == "node7"
    (request,) = seen
    assert (request["method"], request["path"]) == ("PUT", "/teapot?x=1")
    assert json.loads(request["body"]) == {"k": "v"}
    assert request["headers"]["content-type"] == "application/json"
    assert request["headers"]["x-vault-token"] == "t0k"
    assert reply.doc == reply.json and reply.doc["method"] == "PUT"


def test_doc_is_none_for_a_body_that_is_not_json(echo: tuple[int, list[dict[str, Any]]]) -> None:
    port, _ = echo
    reply = call(port, "GET", "/text", timeout=5)

    assert (reply.status, reply.body, reply.doc) == (200, b"not json", None)
    with pytest.raises(ValueError):
        _ = reply.json


def test_a_session_keeps_one_connection_until_the_server_closes_it(
    echo: tuple[int, list[dict[str, Any]]],
) -> None:
    port, seen = echo
    session = Session.to(f"http://127.0.0.1:{port}", timeout=5, token="s")
    try:
        for path in ("/a", "/b", "/close", "/c"):
            assert session.request("GET", path).status == 200
    finally:
        session.close()

    ports = [r["client_port"] for r in seen]
    assert ports[0] == ports[1] == ports[2], "kept alive"
    assert ports[3] != ports[2], "reconnected after Connection: close"
    assert all(r["headers"]["x-service-token"] == "s" for r in seen)


def test_a_session_raises_when_nobody_answers_and_recovers_afterwards(
    echo: tuple[int, list[dict[str, Any]]],
) -> None:
    from harness.ports import free_port

    dead = Session("127.0.0.1", free_port(), timeout=2)
    with pytest.raises(OSError):
        dead.request("GET", "/")
    port, _ = echo
    dead.port = port
    assert dead.request("GET", "/again").status == 200
    dead.close()


def test_an_https_url_needs_a_tls_context() -> None:
    with pytest.raises(ValueError, match="TLS context"):
        fetch("GET", "https://127.0.0.1:1/", timeout=1)
