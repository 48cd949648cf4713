"""Starting real ``coffer server`` processes: the command, a clean environment, a port.

One copy for everything that runs servers as subprocesses: the process-level chaos
cluster (:mod:`chaos.process.cluster`), the HA tests (``tests/cluster/servers.py``)
and the integration tests (``tests/integration/conftest.py``). It lives in ``chaos/``
because the tool must not import the test suite, while the tests may import the tool.
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

__all__ = ["child_env", "coffer_command", "free_port", "spawn_server", "wait_until"]

T = TypeVar("T")

#: What a poll may raise while a server is still starting or changing state.
TRANSIENT: tuple[type[BaseException], ...] = (
    OSError,
    http.client.HTTPException,
    ValueError,
    KeyError,
    TypeError,
)


_CHECKOUT = Path(__file__).resolve().parents[1]


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
        return [sys.executable, "-c", bootstrap]
    script = Path(sys.executable).with_name("coffer")
    if script.exists():
        return [str(script)]
    found = shutil.which("coffer")
    return [found] if found else [sys.executable, "-m", "api.entrypoint"]


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on ``host`` a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


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


def wait_until(
    check: Callable[[], T | None],
    timeout: float,
    what: str,
    every: float = 0.1,
    *,
    retry_on: tuple[type[BaseException], ...] = TRANSIENT,
    error: Callable[[str], BaseException] = RuntimeError,
) -> T:
    """Poll ``check`` until it returns something truthy; ``retry_on`` errors count as "not yet".

    Raises ``error(message)`` on timeout, so each caller keeps its own failure type
    (the chaos tool its ``ClusterError``, the tests ``AssertionError``).
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = check()
        except retry_on as exc:
            last = exc
        else:
            if result:
                return result
            last = result
        if time.monotonic() >= deadline:
            raise error(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")
        time.sleep(every)
