"""Starting and stopping the server processes a benchmark targets, and small HTTP helpers."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from chaos import launch
from chaos.launch import free_port

__all__ = [
    "ROOT",
    "Proc",
    "free_port",
    "http_json",
    "python_command",
    "wait_until",
]

ROOT = Path(__file__).resolve().parents[1]
_T = TypeVar("_T")


def python_command() -> list[str]:
    """The interpreter running the benchmark (the project's virtualenv)."""
    return [sys.executable]


def wait_until(
    check: Callable[[], _T | None], timeout: float, what: str, every: float = 0.05
) -> _T:
    """Poll until ``check`` returns something truthy (the chaos launcher's loop)."""
    return launch.wait_until(check, timeout, what, every)


def http_json(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str = "",
    timeout: float = 30.0,
    host: str = "127.0.0.1",
) -> tuple[int, Any]:
    """One blocking request; the answer's status and decoded JSON body (or ``None``)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["X-Vault-Token"] = token
    payload = None if body is None else json.dumps(body).encode()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    return response.status, (json.loads(raw) if raw else None)


@dataclass
class Proc:
    """A server process in its own session, its output in a log file."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = ROOT
    popen: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    def start(self) -> Proc:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COFFER_", "VAULT_"))}
        env.update(self.env)
        env["PYTHONUNBUFFERED"] = "1"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.started_at = time.monotonic()
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=self.cwd,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def check_alive(self) -> None:
        if self.popen is not None and self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} exited:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return ""

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout``."""
        if self.popen is None or not self.running:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)
