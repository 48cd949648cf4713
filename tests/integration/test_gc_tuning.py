"""A server process runs with api/gc_tuning.py's collector settings (issue 16).

The settings themselves are process-wide, so they are checked in a child
interpreter; the server is checked through what it exports: ``python_gc_*`` in
``sys/metrics``. With CPython's default threshold (700) a burst of concurrent
writes runs several young collections; with the server's, hardly any.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest

from api.gc_tuning import MIDDLE, OLD, YOUNG

if TYPE_CHECKING:
    from harness.server import CofferFactory, ServerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = "gc-root"
WRITES = 3_000
WRITERS = 16


def collections(server: ServerProcess) -> dict[str, int]:
    reply = server.request("GET", "/v1/sys/metrics?format=prometheus", token=ROOT)
    assert reply.status == 200, reply
    found = re.findall(
        r'^python_gc_collections_total\{generation="(\d)"\} (\S+)$', reply.body.decode(), re.M
    )
    assert len(found) == 3, reply.body.decode()
    return {generation: int(float(value)) for generation, value in found}


def test_settings_apply_in_a_fresh_interpreter() -> None:
    script = (
        "import gc\n"
        "from api.gc_tuning import freeze_startup_objects, set_thresholds\n"
        "before = gc.get_freeze_count()\n"
        "set_thresholds()\n"
        "freeze_startup_objects()\n"
        "print(gc.get_threshold(), before, gc.get_freeze_count() > 1000)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    assert out == f"({YOUNG}, {MIDDLE}, {OLD}) 0 True"


def test_a_burst_of_writes_runs_few_young_collections(coffer: CofferFactory) -> None:
    server = coffer.dev_server(root_token=ROOT).start()
    start = collections(server)

    def write(index: int) -> int:
        body = {"data": {"value": "x" * 64, "index": index}}
        return server.request("PUT", f"/v1/secret/data/gc/{index % 50}", body, token=ROOT).status

    with ThreadPoolExecutor(WRITERS) as pool:
        statuses = list(pool.map(write, range(WRITES)))
    assert set(statuses) == {200}
    end = collections(server)
    # At CPython's default threshold these writes ran about 5 young collections.
    assert end["0"] - start["0"] <= 2, (start, end)
    assert end["2"] == start["2"], (start, end)
