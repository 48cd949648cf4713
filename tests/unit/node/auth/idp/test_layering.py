"""The idp method reaches the network only through ``node.outbound``: no aiohttp in node."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]


def test_the_idp_method_imports_neither_aiohttp_nor_api() -> None:
    code = (
        "import sys, node.auth.idp.backend, node.outbound\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('aiohttp', 'api'))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
