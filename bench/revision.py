"""The project's code as it was at an earlier commit, for before/after runs.

A before/after table is only reproducible if "before" is a fixed revision rather
than a switch in today's code, so the perfpass suite runs the server of an
exported commit (``git archive``) next to the working tree's, with the same
interpreter and dependencies.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from bench.procs import ROOT

__all__ = ["tree_at"]


def tree_at(revision: str) -> Path:
    """A directory holding the sources at ``revision`` (exported once, then reused)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    target = Path(tempfile.gettempdir()) / f"coffer-tree-{commit[:12]}"
    if (target / "pyproject.toml").exists():
        return target
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True
    ).stdout
    partial = target.with_name(target.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    # The system's tar: tarfile's extraction filters need Python 3.11.4, and Debian's
    # 3.11.2 (the interpreter make picks) has none. The archive is git's own output.
    subprocess.run(["tar", "-x", "-C", str(partial)], input=archive, check=True)
    partial.rename(target)
    return target
