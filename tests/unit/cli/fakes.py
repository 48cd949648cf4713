"""A tiny canned HTTP server for the CLI tests, and running the CLI (not a test module).

The server is ``http.server.ThreadingHTTPServer`` on 127.0.0.1:0 in a thread;
it records every request and answers from a table of Vault-shaped responses.
"""

from __future__ import annotations

import io
import json
import os
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from cli.main import main


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Route:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FakeServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Seen] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = self  # type: ignore[attr-defined]
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.address = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def on(
        self,
        method: str,
        path: str,
        body: Any = None,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.routes[(method, path)] = Route(status, body, headers or {})

    def only(self) -> Seen:
        assert len(self.requests) == 1, self.requests
        return self.requests[0]

    def last(self) -> Seen:
        assert self.requests, "no requests"
        return self.requests[-1]

    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests]


class _Handler(BaseHTTPRequestHandler):
    def _handle(self) -> None:
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake.requests.append(
            Seen(self.command, self.path, headers, json.loads(raw) if raw else None)
        )
        route = fake.routes.get((self.command, self.path), Route(404, {"errors": []}))
        payload = b"" if route.body is None else json.dumps(route.body).encode()
        self.send_response(route.status)
        for name, value in route.headers.items():
            self.send_header(name, value)
        if payload:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = do_LIST = do_PATCH = _handle

    def log_message(self, format: str, *args: Any) -> None:
        pass


def isolate_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """No COFFER_/VAULT_ settings or proxies leak in; HOME is ``home`` (no token file)."""
    for name in list(os.environ):
        if name.startswith(("COFFER_", "VAULT_")) or name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NO_PROXY", "*")
    monkeypatch.setenv("HOME", str(home))
    return home


@contextmanager
def serving(
    monkeypatch: pytest.MonkeyPatch, home: Path, *, token: str | None = None
) -> Iterator[FakeServer]:
    """A started fake server, with COFFER_ADDR pointing at it, in a clean environment
    (and COFFER_TOKEN set to ``token`` if given)."""
    isolate_env(monkeypatch, home)
    fake = FakeServer()
    fake.start()
    monkeypatch.setenv("COFFER_ADDR", fake.address)
    if token is not None:
        monkeypatch.setenv("COFFER_TOKEN", token)
    try:
        yield fake
    finally:
        fake.stop()


class Terminal(io.StringIO):
    """A stdin that claims to be a TTY, so the CLI prompts with getpass."""

    def isatty(self) -> bool:
        return True


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
