"""Polling until something holds: the one wait loop of the tests, chaos, bench and deploy.

A server that is starting, electing or changing role answers with refused
connections, half-written replies or not-yet-there JSON keys for a while; a wait
treats those as "not yet" rather than as failures, and fails only when time runs out.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["TRANSIENT", "WaitTimeout", "wait_until"]

T = TypeVar("T")

#: What a poll may raise while a server is still starting or changing state.
TRANSIENT: tuple[type[BaseException], ...] = (
    OSError,
    http.client.HTTPException,
    ValueError,
    KeyError,
    TypeError,
)


class WaitTimeout(AssertionError):
    """A wait ran out of time; an AssertionError so that a test fails as on an assert."""


def wait_until(
    check: Callable[[], T | None],
    timeout: float,
    what: str,
    every: float = 0.1,
    *,
    retry_on: tuple[type[BaseException], ...] = TRANSIENT,
    error: Callable[[str], BaseException] = WaitTimeout,
) -> T:
    """Poll ``check`` until it returns something truthy, and return that.

    ``retry_on`` errors count as "not yet". On timeout raises ``error(message)``,
    so each caller keeps its own failure type (the chaos tool and clusterctl their
    ``ClusterError``, the tests an AssertionError); the message names ``what`` and
    the last answer or error.
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
