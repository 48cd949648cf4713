"""Password hashing for userpass: salted Argon2id, kept off the event loop.

One hash or verification costs about 64 MiB and 0.1 s (argon2-cffi's RFC 9106
low-memory profile), so the work runs in a small thread pool of its own: the
event loop keeps serving, and a burst of logins cannot allocate without bound.

A login for a user that does not exist verifies against a dummy hash of the
same cost, so the answer takes as long as a wrong password does (no timing
signal for user enumeration). Argon2's verification compares in constant time.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

__all__ = ["Passwords"]

_T = TypeVar("_T")

#: Hashes at once across every userpass mount (each holds ~64 MiB while it runs).
_WORKERS = max(2, min(4, os.cpu_count() or 1))
_POOL = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="coffer-argon2")

#: A hash of a throw-away password with argon2-cffi's default parameters; used
#: in place of a missing user's hash so both paths cost the same.
_DUMMY_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$3L3ZIeNjutuLi1CGd0MnMA"
    "$EJEcJJYD8jimIzKYbDXOSAb98DgR/E5aGyK1WGbK6rE"
)


class Passwords:
    """Hash and verify passwords with one ``PasswordHasher`` (tests pass a cheap one)."""

    def __init__(self, hasher: PasswordHasher | None = None) -> None:
        self._hasher = hasher or PasswordHasher()
        fits = not self._hasher.check_needs_rehash(_DUMMY_HASH)
        self._dummy: str | None = _DUMMY_HASH if fits else None

    async def hash(self, password: str) -> str:
        return await _run(self._hasher.hash, password)

    async def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches ``stored``; ``None`` (no such user) costs the same."""
        return await _run(self._verify, stored, password)

    def _verify(self, stored: str | None, password: str) -> bool:
        if stored is None:
            if self._dummy is None:
                self._dummy = self._hasher.hash(os.urandom(16).hex())
            self._check(self._dummy, password)
            return False
        return self._check(stored, password)

    def _check(self, stored: str, password: str) -> bool:
        try:
            return self._hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False


async def _run(function: Callable[..., _T], *args: object) -> _T:
    return await asyncio.get_running_loop().run_in_executor(_POOL, function, *args)
