"""Starting real ``coffer server`` processes: the command, a clean environment, a stop.

One copy for everything that runs servers as subprocesses: the process cluster
(:mod:`harness.cluster`, used by the chaos tool and the HA tests), one server
(:mod:`harness.server`, the integration and UI tests) and the benchmarks.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

__all__ = [
    "SERVER_COVERAGE_ENV",
    "LogSource",
    "assert_logs_free_of",
    "child_env",
    "coffer_command",
    "spawn_server",
    "terminate",
]

_CHECKOUT = Path(__file__).resolve().parents[1]


#: When set (a coverage data file path), a server started from this checkout measures
#: its own line coverage of the product packages into ``<path>.<suffix>``, saved when
#: it exits (not when it is killed): ``scripts/test_suite.py`` combines these files.
SERVER_COVERAGE_ENV = "COFFER_SERVER_COVERAGE"


def _measured(bootstrap: str, data_file: str) -> str:
    return (
        "import coverage; _cov = coverage.Coverage("
        f"data_file={data_file!r}, data_suffix=True, config_file=False, "
        "source_pkgs=['node', 'api', 'consensus', 'sdk']); _cov.start()\n"
        "try:\n"
        + "".join(f"    {line.strip()}\n" for line in bootstrap.split("; "))
        + "finally:\n    _cov.stop(); _cov.save()\n"
    )


def coffer_command() -> list[str]:
    """``coffer``: the code of the checkout this launcher belongs to, when it is one.

    The console script imports whatever the virtualenv's editable install points
    at, which is another tree when tests run from a second worktree; otherwise the
    console script of this virtualenv (or the module as a fallback).
    """
    if (_CHECKOUT / "api" / "entrypoint.py").is_file():
        bootstrap = (
            f"import sys; sys.path.insert(0, {str(_CHECKOUT)!r}); "
            "from api.entrypoint import main; sys.exit(main())"
        )
        if data_file := os.environ.get(SERVER_COVERAGE_ENV):
            bootstrap = _measured(bootstrap, data_file)
        return [sys.executable, "-c", bootstrap]
    script = Path(sys.executable).with_name("coffer")
    if script.exists():
        return [str(script)]
    found = shutil.which("coffer")
    return [found] if found else [sys.executable, "-m", "api.entrypoint"]


def child_env(strip: Sequence[str] = ("COFFER_", "PYTHON")) -> dict[str, str]:
    """This process's environment minus the variables that would change a server's behaviour."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(tuple(strip))}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def spawn_server(
    args: Sequence[str],
    stdout: IO[Any],
    stderr: IO[Any],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """``coffer server ARGS`` in a session of its own, so a Ctrl-C reaches only the caller."""
    return subprocess.Popen(
        [*coffer_command(), "server", *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        env=child_env() if env is None else env,
        cwd=cwd,
        start_new_session=True,
    )


def terminate(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """SIGTERM (and SIGCONT, so a stopped process can exit), then SIGKILL if it hangs.

    Returns True if it exited on SIGTERM within ``timeout``; always reaps it.
    """
    if proc.poll() is not None:
        proc.wait()
        return True
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGCONT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False
    return True


class LogSource(Protocol):
    @property
    def name(self) -> str: ...

    def log_text(self) -> str: ...


def assert_logs_free_of(nodes: Sequence[LogSource], forbidden: Sequence[str]) -> None:
    """Fail (AssertionError) if any node's log holds any of ``forbidden``; shows its tail."""
    for node in nodes:
        log = node.log_text()
        for text in forbidden:
            assert text not in log, f"{node.name}: {text!r} in {log[-4000:]}"
