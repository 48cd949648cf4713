"""One real ``coffer server`` process on loopback: start, wait, talk, stop, read its logs.

For the integration tests (``tests/integration/conftest.py`` hands these out through
its ``coffer`` fixture) and the UI tests. Its stdout and stderr go to files, so a
test can assert on the logs; a failed wait or a hung stop raises AssertionError.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.ports import free_port
from harness.process import child_env as _child_env
from harness.process import coffer_command, spawn_server, terminate
from harness.rest import NO_ANSWER, Reply, connect, send
from harness.wait import wait_until

__all__ = [
    "CofferFactory",
    "ServerProcess",
    "child_env",
    "dev_server",
    "file_config",
    "free_port",
]

READY_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0


def child_env() -> dict[str, str]:
    """This environment minus anything that would change the server's behaviour."""
    return _child_env(strip=("COFFER_", "VAULT_", "PYTHON"))


@dataclass
class ServerProcess:
    """One ``coffer server`` subprocess; ``start``/``stop``/``kill``/``restart`` it freely."""

    args: list[str]
    port: int
    logdir: Path
    name: str = "server"
    tls_context: ssl.SSLContext | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    starts: int = 0

    # -- addresses ----------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def scheme(self) -> str:
        return "https" if self.tls_context is not None else "http"

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{self.address}"

    @property
    def stdout_path(self) -> Path:
        return self.logdir / f"{self.name}.stdout"

    @property
    def stderr_path(self) -> Path:
        return self.logdir / f"{self.name}.stderr"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "server not started"
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- process control ----------------------------------------------------------

    def start(self, *, wait: bool = True, timeout: float = READY_TIMEOUT) -> ServerProcess:
        assert not self.running, "already running"
        self.logdir.mkdir(parents=True, exist_ok=True)
        # Appending keeps the logs of every run of this server in one file.
        with self.stdout_path.open("ab") as out, self.stderr_path.open("ab") as err:
            self.proc = spawn_server(self.args, out, err, env=child_env())
        self.starts += 1
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT, *, healthy: bool = False) -> None:
        """Poll ``sys/health`` until the server answers with any status (200 if ``healthy``)."""

        def ready() -> Reply | None:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"{self.name} exited with {self.proc.returncode} before becoming ready:\n"
                    f"{self.stderr_text()[-4000:]}"
                )
            reply = self.request("GET", "/v1/sys/health", timeout=2)
            return reply if not healthy or reply.status == 200 else None

        wait_until(ready, timeout, f"{self.name} to be ready", 0.05, retry_on=NO_ANSWER)

    def send_signal(self, sig: int) -> None:
        assert self.running, "not running"
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM and wait; returns the exit code (fails the test if it hangs)."""
        proc = self.proc
        if proc is None:
            return 0
        if proc.poll() is None and not terminate(proc, timeout):
            raise AssertionError(f"{self.name} ignored SIGTERM for {timeout}s")
        return proc.returncode

    def kill(self) -> int:
        """SIGKILL and wait: a crash, as far as the server can tell."""
        proc = self.proc
        assert proc is not None
        if proc.poll() is None:
            proc.kill()
        return proc.wait(STOP_TIMEOUT)

    def restart(self, *, wait: bool = True) -> ServerProcess:
        code = self.stop()
        assert code == 0, f"{self.name} exited with {code} on SIGTERM"
        return self.start(wait=wait)

    def wait_exit(self, timeout: float = STOP_TIMEOUT) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def cleanup(self) -> None:
        """Finalizer: never leaves a process or a zombie behind."""
        proc = self.proc
        if proc is None:
            return
        terminate(proc, STOP_TIMEOUT)

    # -- logs --------------------------------------------------------------------

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stdout_text(self) -> str:
        try:
            return self.stdout_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_events(self) -> list[dict[str, Any]]:
        """The JSON log lines on stderr (other lines are skipped)."""
        events = []
        for line in self.stderr_text().splitlines():
            with contextlib.suppress(ValueError):
                doc = json.loads(line)
                if isinstance(doc, dict):
                    events.append(doc)
        return events

    def unseal_key(self) -> str:
        """The unseal key a ``-dev`` server printed at start-up."""
        match = re.search(r"Unseal Key: (\S+)", self.stdout_text() + self.stderr_text())
        assert match, f"{self.name} printed no unseal key:\n{self.stdout_text()[-2000:]}"
        return match.group(1)

    def count_events(self, event: str) -> int:
        return sum(1 for e in self.log_events() if e.get("event") == event)

    def wait_for_event(self, event: str, count: int = 1, timeout: float = 10.0) -> None:
        """Wait until ``event`` has been logged at least ``count`` times."""
        wait_until(
            lambda: self.count_events(event) >= count,
            timeout,
            f"{self.name}: event {event!r} logged {count} time(s)",
            0.05,
        )

    # -- HTTP --------------------------------------------------------------------

    def connection(
        self, *, timeout: float = 10.0, context: ssl.SSLContext | None = None
    ) -> http.client.HTTPConnection:
        """A new connection the caller must close (``context`` overrides the TLS trust)."""
        return connect("127.0.0.1", self.port, timeout=timeout, tls=context or self.tls_context)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw_body: bytes | None = None,
        timeout: float = 10.0,
    ) -> Reply:
        conn = self.connection(timeout=timeout)
        try:
            return send(conn, method, path, body, token=token, headers=headers, raw=raw_body)
        finally:
            conn.close()

    # -- lifecycle shortcuts -----------------------------------------------------------

    def health(self) -> int:
        return self.request("GET", "/v1/sys/health").status

    def init(self, shares: int, threshold: int) -> dict[str, Any]:
        response = self.request(
            "PUT", "/v1/sys/init", {"secret_shares": shares, "secret_threshold": threshold}
        )
        assert response.status == 200, response
        doc: dict[str, Any] = response.json
        assert len(doc["keys"]) == shares and len(doc["keys_base64"]) == shares, doc
        return doc

    def unseal(self, keys: list[str]) -> dict[str, Any]:
        """Submit each key; asserts the last one unseals."""
        status: dict[str, Any] = {}
        for key in keys:
            response = self.request("PUT", "/v1/sys/unseal", {"key": key})
            assert response.status == 200, response
            status = response.json
        assert status.get("sealed") is False, status
        return status

    def kv_put(self, token: str, name: str, data: dict[str, Any]) -> Reply:
        response = self.request("PUT", f"/v1/secret/data/{name}", {"data": data}, token=token)
        assert response.status == 200, response
        return response

    def kv_get(self, token: str, name: str) -> Any:
        response = self.request("GET", f"/v1/secret/data/{name}", token=token)
        assert response.status == 200, response
        return response.json["data"]["data"]


def file_config(
    address: str,
    data_dir: Path,
    *,
    tls: tuple[Path, Path] | None = None,
    log_level: str = "info",
    extra: str = "",
) -> str:
    if tls is None:
        listener = f'listener "tcp" {{\n  address = "{address}"\n  tls_disable = 1\n}}\n'
    else:
        cert, key = tls
        listener = (
            f'listener "tcp" {{\n  address = "{address}"\n'
            f'  tls_cert_file = "{cert}"\n  tls_key_file = "{key}"\n}}\n'
        )
    return (
        f'{listener}storage "file" {{\n  path = "{data_dir}"\n}}\n'
        f'log_level = "{log_level}"\n{extra}'
    )


class CofferFactory:
    """Builds ``ServerProcess`` objects for one test and cleans them all up."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.servers: list[ServerProcess] = []
        self._count = 0

    @staticmethod
    def free_port() -> int:
        return free_port()

    def _name(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def with_config(
        self,
        config_text: str,
        *,
        port: int,
        tls_context: ssl.SSLContext | None = None,
        name: str | None = None,
    ) -> ServerProcess:
        name = name or self._name("server")
        config = self.tmp_path / f"{name}.hcl"
        config.write_text(config_text, encoding="utf-8")
        server = ServerProcess(
            [f"-config={config}"],
            port=port,
            logdir=self.tmp_path / "logs",
            name=name,
            tls_context=tls_context,
        )
        self.servers.append(server)
        return server

    def file_server(
        self,
        data_dir: Path | None = None,
        *,
        tls: tuple[Path, Path] | None = None,
        tls_context: ssl.SSLContext | None = None,
        log_level: str = "info",
        name: str | None = None,
    ) -> ServerProcess:
        """A not-yet-started server on file storage (``data_dir`` defaults to a fresh one)."""
        name = name or self._name("server")
        port = free_port()
        data_dir = data_dir or self.tmp_path / f"{name}-data"
        text = file_config(f"127.0.0.1:{port}", data_dir, tls=tls, log_level=log_level)
        return self.with_config(text, port=port, tls_context=tls_context, name=name)

    def inmem_server(self, name: str | None = None) -> ServerProcess:
        port = free_port()
        text = (
            f'listener "tcp" {{\n  address = "127.0.0.1:{port}"\n  tls_disable = true\n}}\n'
            'storage "inmem" {}\n'
        )
        return self.with_config(text, port=port, name=name)

    def dev_server(self, root_token: str | None = None, log_level: str = "") -> ServerProcess:
        port = free_port()
        args = ["-dev", f"-dev-listen-address=127.0.0.1:{port}"]
        if root_token is not None:
            args.append(f"-dev-root-token-id={root_token}")
        if log_level:
            args.append(f"-log-level={log_level}")
        server = ServerProcess(
            args, port=port, logdir=self.tmp_path / "logs", name=self._name("dev")
        )
        self.servers.append(server)
        return server

    def run(self, *args: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
        """Run ``coffer server ARGS`` to completion (for start-up failures)."""
        return subprocess.run(
            [*coffer_command(), "server", *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_env(),
            check=False,
        )

    def cleanup(self) -> None:
        for server in self.servers:
            server.cleanup()


@contextlib.contextmanager
def dev_server(logdir: Path, root_token: str, log_level: str = "") -> Iterator[ServerProcess]:
    """A ``coffer server -dev`` for a module-scoped fixture: active (health 200) when
    yielded, stopped afterwards."""
    factory = CofferFactory(logdir)
    try:
        server = factory.dev_server(root_token, log_level).start(wait=False)
        server.wait_ready(healthy=True)
        yield server
    finally:
        factory.cleanup()
