"""Real servers and Debian's chromium for the browser tests (and the screenshot script).

Playwright drives the system's ``/usr/bin/chromium`` (``COFFER_CHROMIUM`` overrides
it): Playwright's own browser download cannot work on a machine without its CDN.
Servers are real ``coffer server`` processes on loopback with ``ui`` on
(:mod:`harness.server` and the HA tests' cluster).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from harness import server
from harness.rest import Reply, fetch
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


def call(
    base: str,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    return fetch(method, base + path, body, timeout=15, token=token, headers=headers)


@dataclass
class DevServer:
    """``coffer server -dev`` (ui on by default) with a known root token."""

    base: str
    root_token: str
    unseal_key: str
    proc: subprocess.Popen[bytes]

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = "",
        headers: dict[str, str] | None = None,
    ) -> Reply:
        chosen = self.root_token if token == "" else token
        return call(self.base, method, path, body, chosen, headers)


@contextlib.contextmanager
def dev_server(logdir: Path, root_token: str = "root-ui-token") -> Iterator[DevServer]:
    with server.dev_server(logdir, root_token) as dev:
        assert dev.proc is not None
        yield DevServer(dev.base_url, root_token, dev.unseal_key(), dev.proc)


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
