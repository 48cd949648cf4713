"""Real servers and Debian's chromium for the browser tests (and the screenshot script).

Playwright drives the system's ``/usr/bin/chromium`` (``COFFER_CHROMIUM`` overrides
it): Playwright's own browser download cannot work on a machine without its CDN.
Servers are real ``coffer server`` processes on loopback with ``ui`` on.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from chaos import launch
from chaos.rest import Reply, send
from tests.cluster import servers

CHROMIUM = os.environ.get("COFFER_CHROMIUM", "/usr/bin/chromium")
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 740}


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright (PyPI) is not installed"
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"chromium not found at {CHROMIUM} (Debian package 'chromium')"
    return None


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield chromium
        finally:
            chromium.close()


def call(base: str, method: str, path: str, body: Any = None, token: str | None = None) -> Reply:
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=15)
    try:
        return send(conn, method, path, body, token=token)
    finally:
        conn.close()


@dataclass
class DevServer:
    """``coffer server -dev`` (ui on by default) with a known root token."""

    base: str
    root_token: str
    unseal_key: str
    proc: subprocess.Popen[bytes]

    def call(self, method: str, path: str, body: Any = None, token: str | None = "") -> Reply:
        return call(self.base, method, path, body, self.root_token if token == "" else token)


@contextlib.contextmanager
def dev_server(logdir: Path, root_token: str = "root-ui-token") -> Iterator[DevServer]:
    port = launch.free_port()
    out = logdir / "dev.log"
    with out.open("wb") as log:
        proc = launch.spawn_server(
            [
                "-dev",
                f"-dev-root-token-id={root_token}",
                f"-dev-listen-address=127.0.0.1:{port}",
            ],
            log,
            log,
        )
    base = f"http://127.0.0.1:{port}"
    try:

        def ready() -> str:
            if proc.poll() is not None:
                raise RuntimeError(f"dev server exited: {out.read_text()[-2000:]}")
            match = re.search(r"Unseal Key: (\S+)", out.read_text())
            assert match, "no unseal key yet"
            assert call(base, "GET", "/v1/sys/health").status == 200
            return match.group(1)

        key = servers.wait_until(ready, 30, "the dev server")
        yield DevServer(base, root_token, key, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class UiNode(servers.Node):
    """A cluster node whose configuration turns the UI on (``ui = true``)."""

    def config_text(self) -> str:
        return super().config_text() + "ui = true\n"


class UiCluster(servers.Cluster):
    node_type: ClassVar[type[Any]] = UiNode


@contextlib.contextmanager
def idp_emulator(api_token: str) -> Iterator[tuple[Any, str]]:
    """The provider emulator (an aiohttp app) on its own loop in a thread, so the sync
    browser test can block while Coffer calls it; yields the emulator and its origin."""
    import asyncio
    import threading

    from tests.support.idp_emulator import IdpEmulator

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="idp-emulator", daemon=True)
    thread.start()
    emulator = IdpEmulator(api_token=api_token)
    try:
        origin = asyncio.run_coroutine_threadsafe(emulator.start(), loop).result(30)
        yield emulator, origin
    finally:
        asyncio.run_coroutine_threadsafe(emulator.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
