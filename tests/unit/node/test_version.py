"""``node.version`` is a leaf: importing it pulls in no other ``node`` module."""

from __future__ import annotations

import subprocess
import sys

from node.core import core
from node.framework import backend
from node.version import VERSION


def test_version_module_imports_nothing_from_node() -> None:
    probe = "import sys, node.version; print(sorted(m for m in sys.modules if m[:4] == 'node'))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['node', 'node.version']"


def test_core_and_framework_report_the_same_version() -> None:
    assert core.VERSION == VERSION
    assert backend._server_version() == VERSION
