"""Real ``coffer server`` processes for integration tests (:mod:`harness.server`).

Every server is a subprocess listening on a free loopback port, with its stdout
and stderr captured to files under the test's ``tmp_path`` so tests can assert on
the logs. The ``coffer`` fixture hands out ``ServerProcess`` objects and stops
(SIGTERM, then SIGKILL) every one of them in its finalizer, whatever the test did.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.server import CofferFactory


def no_proxy_env() -> dict[str, str]:
    """For a client child process (the CLI): no Coffer/Vault settings, no proxies."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COFFER_", "VAULT_")) and not k.lower().endswith("_proxy")
    }
    env["NO_PROXY"] = "*"
    return env


@pytest.fixture
def coffer(tmp_path: Path) -> Iterator[CofferFactory]:
    factory = CofferFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.cleanup()
