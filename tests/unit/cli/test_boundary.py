"""The CLI is a client: loading it loads no server code (cli/DESIGN.md).

``lint-imports`` checks the static imports; this checks what a fresh interpreter
actually loads when it imports every command, so a re-export or a package
``__init__`` that drags the core in is caught too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import json, sys
import cli.main
roots = {"node", "api", "consensus", "aiohttp", "pysyncobj", "sdk"}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in roots)))
"""


def test_importing_every_command_loads_only_the_shared_leaf() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == ["sdk", "sdk.durations"]
