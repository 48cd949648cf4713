"""sdk is a leaf: loading all of it loads nothing of ours (sdk/DESIGN.md).

``lint-imports`` checks the static imports; this checks what a fresh interpreter
actually loads, so an import hidden in a package ``__init__`` is caught too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import importlib, json, pkgutil, sys
import sdk
for info in pkgutil.iter_modules(sdk.__path__):
    importlib.import_module("sdk." + info.name)
ours = {"node", "api", "consensus", "cli", "harness"}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ours)))
"""


def test_importing_sdk_loads_nothing_of_ours() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == []
