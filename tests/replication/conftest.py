"""Replication's server processes measure their own coverage when ``make test`` asks.

Most of node/replication runs only inside the ``coffer server`` processes these
tests start, so the in-process coverage floor would not see it. When
``scripts/test_suite.py`` sets ``COFFER_REPLICATION_COVERAGE`` (a data file path),
the servers started here record their line coverage there (harness.process,
``SERVER_COVERAGE_ENV``) and the runner combines it before checking the floor.
Only this package does it: the chaos and failover tests elsewhere keep servers
running at full speed, since their time bounds assume that.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from harness.process import SERVER_COVERAGE_ENV

REQUEST_ENV = "COFFER_REPLICATION_COVERAGE"


@pytest.fixture(scope="package", autouse=True)
def _servers_measure_coverage() -> Iterator[None]:
    data_file = os.environ.get(REQUEST_ENV)
    if not data_file:
        yield
        return
    os.environ[SERVER_COVERAGE_ENV] = data_file
    try:
        yield
    finally:
        os.environ.pop(SERVER_COVERAGE_ENV, None)
