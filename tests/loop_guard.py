"""Pytest plugin: a blocking call on the event loop fails the test (blockbuster).

Every test runs with blockbuster active. Blockbuster wraps the blocking calls of the
standard library (``time.sleep``, file and socket I/O, ``threading.Lock.acquire`` on
a held lock, ``os.stat`` ...) and raises ``BlockingError`` when one runs in a thread
that is running an event loop, so a handler that blocks the loop (and with it every
other request of that node) fails its test instead of only slowing production.

Scope: only calls with product code (``node``, ``api``, ``consensus``) on the stack
are checked, so the tests' own helpers may block. The product calls below are allowed
on purpose, each bounded and listed with its reason (also in docs/architecture.md,
"Guards"); anything else is a bug to move off the loop (``asyncio.to_thread``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from blockbuster import BlockBuster, blockbuster_ctx

# (file, functions in it, reason): product functions in which every blocking call is
# allowed. Keep each entry a named function, never a whole module.
ALLOWED: list[tuple[str, frozenset[str], str]] = [
    (
        "node/physical/file.py",
        frozenset({"__init__"}),
        "FileBackend opens its directory, lock file and write-ahead log once, at startup",
    ),
    (
        "api/ui/__init__.py",
        frozenset({"_files"}),
        "the web UI's shipped files are read into memory once, when the app is built",
    ),
    (
        "node/policy/parser.py",
        frozenset({"_load"}),
        "pyhcl rebuilds its ply lexer per parse, which stats pyhcl's own source (inspect)",
    ),
]

# The same for the test tools themselves, when a product call is on the stack.
TOOLS_ALLOWED: list[tuple[str, frozenset[str], str]] = [
    (
        "coverage/collector.py",
        frozenset({"lock_data"}),
        "pytest-cov's tracer locks its data when a thread-pool worker records a new file",
    ),
]


def allow(blockbuster: BlockBuster) -> None:
    """Apply :data:`ALLOWED` and :data:`TOOLS_ALLOWED` to an active blockbuster."""
    for filename, functions, _reason in ALLOWED + TOOLS_ALLOWED:
        for function in blockbuster.functions.values():
            function.can_block_in(filename, functions)


@pytest.fixture(scope="session", autouse=True)
def _no_blocking_on_the_loop() -> Iterator[BlockBuster]:
    """Autouse for the whole session: set up before and torn down after every other
    fixture, so it covers every test and every fixture's setup and teardown. Once per
    session, not per test: wrapping and unwrapping ~60 functions cost ~3.6 ms a test
    (docs/performance.md, "Test suite time"); the check itself runs at each call."""
    with blockbuster_ctx(["node", "api", "consensus", "sdk"]) as blockbuster:
        allow(blockbuster)
        yield blockbuster
