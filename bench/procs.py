"""Starting and stopping the server processes a benchmark targets (Coffer, etcd, HAProxy).

Ports, waits and HTTP are the harness's (:mod:`harness.ports`, :mod:`harness.wait`,
:mod:`harness.rest`).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.process import child_env, terminate

__all__ = ["ROOT", "Proc", "python_command"]

ROOT = Path(__file__).resolve().parents[1]


def python_command() -> list[str]:
    """The interpreter running the benchmark (the project's virtualenv)."""
    return [sys.executable]


@dataclass
class Proc:
    """A server process in its own session, its output in a log file."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = ROOT
    popen: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    def start(self) -> Proc:
        env = child_env(strip=("COFFER_", "VAULT_"))
        env.update(self.env)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.started_at = time.monotonic()
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=self.cwd,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def check_alive(self) -> None:
        if self.popen is not None and self.popen.poll() is not None:
            raise RuntimeError(f"{self.name} exited:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return ""

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout``."""
        if self.popen is not None:
            terminate(self.popen, timeout)
