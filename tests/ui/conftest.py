"""Browser fixtures: one chromium and one dev server for the module, a fresh browser
context (no storage) per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import require
from tests.ui.support import DESKTOP, DevServer, browser, chromium_missing, dev_server


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    missing = chromium_missing()
    require(missing is None, missing or "")
    with browser() as found:
        yield found


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A page that fails the test on any JavaScript error or console error."""
    context = chromium.new_context(viewport=DESKTOP)
    page = context.new_page()
    # A bound on waiting, not a speed check: the browser shares both cores with the
    # parallel stage of `make test` (scripts/test_suite.py).
    page.set_default_timeout(45_000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on(
        "console",
        lambda msg: (
            problems.append(f"console: {msg.text}")
            if msg.type == "error" and "Failed to load resource" not in msg.text
            else None
        ),
    )
    page.problems = problems  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        context.close()


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One dev server for the module (each test has its own browser context): the
    tests write under their own paths and mounts, and a start costs ~1.5 s a test."""
    with dev_server(tmp_path_factory.mktemp("ui-dev")) as server:
        yield server
