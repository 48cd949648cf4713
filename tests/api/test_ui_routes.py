"""The web UI's routes: on only with ``ui``, only shipped files, safe headers."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from api.app import create_app
from api.ui import STATIC_DIR
from node.core.core import Core
from node.physical.inmem import InmemBackend
from tests.listener_server import ListenerTestServer


async def _client(ui: bool) -> TestClient:
    client = TestClient(ListenerTestServer(create_app(Core(InmemBackend()), ui=ui)))
    await client.start_server()
    return client


@pytest.fixture
async def ui_on() -> AsyncIterator[TestClient]:
    client = await _client(True)
    try:
        yield client
    finally:
        await client.close()


async def test_root_and_ui_redirect_to_the_page(ui_on: TestClient) -> None:
    for path in ("/", "/ui"):
        reply = await ui_on.get(path, allow_redirects=False)
        assert reply.status == 307
        assert reply.headers["Location"] == "/ui/"
    page = await ui_on.get("/")
    assert page.status == 200
    assert page.content_type == "text/html"
    assert '<script type="module" src="js/main.js">' in await page.text()


async def test_modules_are_served_as_javascript_with_a_strict_policy(ui_on: TestClient) -> None:
    reply = await ui_on.get("/ui/js/main.js")
    assert reply.status == 200
    assert reply.content_type == "text/javascript"
    policy = reply.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    css = await ui_on.get("/ui/app.css")
    assert css.content_type == "text/css"


@pytest.mark.parametrize(
    "path",
    ["/ui/nope.js", "/ui/../api/app.py", "/ui/%2e%2e/__init__.py", "/ui/js/../../__init__.py"],
)
async def test_only_shipped_files_are_served(ui_on: TestClient, path: str) -> None:
    reply = await ui_on.get(path)
    assert reply.status == 404
    assert (await reply.json())["errors"]


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/ui/"), ("DELETE", "/"), ("PUT", "/ui/app.css")]
)
async def test_another_verb_on_a_page_is_the_apis_405(
    ui_on: TestClient, method: str, path: str
) -> None:
    """The fallback resource finds that a page has the path but not the verb, as
    aiohttp's router would, and answers through the edge like any error."""
    reply = await ui_on.request(method, path, allow_redirects=False)
    assert reply.status == 405
    assert (await reply.json())["errors"] == ["unsupported operation"]
    assert reply.headers["X-Request-Id"] and reply.headers["Server"] == "Coffer"


def test_the_app_has_no_middleware() -> None:
    """The edge wraps each handler: a middleware would cost every request aiohttp's chaining."""
    assert not create_app(Core(InmemBackend()), ui=True).middlewares


async def test_without_ui_nothing_is_served() -> None:
    client = await _client(False)
    try:
        for path in ("/", "/ui/", "/ui/js/main.js"):
            assert (await client.get(path, allow_redirects=False)).status == 404
        assert (await client.get("/v1/sys/seal-status")).status == 200
    finally:
        await client.close()


def test_every_module_import_names_a_shipped_file() -> None:
    """No build step checks the imports, so this does: a typo would be a blank page."""
    modules = list(STATIC_DIR.rglob("*.js"))
    assert len(modules) > 5
    pattern = re.compile(r'^\s*(?:import|export)\s[^"\']*?from\s+["\']([^"\']+)["\']', re.M | re.S)
    for module in modules:
        for target in pattern.findall(module.read_text()):
            assert target.startswith("./") or target.startswith("../"), (module, target)
            assert (module.parent / target).resolve().is_file(), (module, target)


def test_nothing_is_fetched_from_elsewhere() -> None:
    """No CDN: no absolute URL in the page's code or markup (links in comments aside)."""
    for path in STATIC_DIR.rglob("*"):
        if path.suffix in {".js", ".html", ".css"}:
            code = "\n".join(
                line for line in path.read_text().splitlines() if not line.lstrip().startswith("//")
            )
            assert not re.search(r"https?://", code), path
    assert Path(STATIC_DIR, "index.html").is_file()
