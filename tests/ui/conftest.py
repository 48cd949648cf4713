"""Browser fixtures: one chromium for the module, a fresh context (no storage) per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
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
    page.set_default_timeout(15_000)
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


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevServer]:
    with dev_server(tmp_path) as server:
        yield server
