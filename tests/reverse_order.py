"""Opt-in plugin: every module's tests in reverse order (``-p tests.reverse_order``).

Why: ``make test``'s parallel stage steals work, so a worker may run any slice of a
module in any order against the module-scoped server or cluster. Running the suite
with each module reversed shows a test that leaves shared state behind for the
next one (docs/architecture.md, "Guards").
"""

from __future__ import annotations

from itertools import groupby

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    modules = [list(group) for _, group in groupby(items, key=lambda item: item.path)]
    items[:] = [item for module in modules for item in reversed(module)]
