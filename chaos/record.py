"""Writing a results block into a document between two markers, with where it came from.

Both runners' ``--record FILE``: the block replaces whatever sits between the
markers (or is appended with them), so a doc keeps its prose and only the numbers
are regenerated.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

__all__ = ["provenance", "replace_block"]

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def provenance() -> str:
    """``2026-11-25 10:30 UTC, commit abc1234`` (``+ uncommitted changes`` when the
    code that runs or is run has some)."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git(
        "status", "--porcelain", "--", "node", "api", "consensus", "cli", "sdk", "deploy", "chaos"
    ):
        commit += " + uncommitted changes"
    return f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}"


def replace_block(path: Path, block: str, start: str, end: str) -> None:
    """Put ``block`` (which starts with ``start`` and ends with ``end``) into ``path``."""
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + block + "\n"
    path.write_text(text)
