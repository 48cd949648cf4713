"""The physical-backend protocol and the transaction operations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from sdk.errors import InvalidRequestError
from sdk.record import record

__all__ = [
    "ANY_REVISION",
    "AppliedChanges",
    "Check",
    "Delete",
    "Entry",
    "PhysicalBackend",
    "Put",
    "TxnOp",
    "children_of",
    "validate_key",
]

#: ``expect`` value meaning "do not check the revision".
ANY_REVISION: int | None = None


@record
class Entry:
    """A stored value and its revision.

    Revisions come from one backend-wide counter that never goes backwards,
    so a deleted-then-recreated key never reuses a revision (no ABA).
    """

    key: str
    value: bytes
    revision: int


@record
class Put:
    """Write ``value`` at ``key``; with ``expect`` set, only if the key's
    current revision equals it (0 means "must not exist")."""

    key: str
    value: bytes
    expect: int | None = None


@record
class Delete:
    """Remove ``key`` (absent keys are fine unless ``expect`` says otherwise)."""

    key: str
    expect: int | None = None


@record
class Check:
    """Assert ``key`` is at revision ``expect`` without changing it."""

    key: str
    expect: int


TxnOp = Put | Delete | Check


class AppliedChanges(Protocol):
    """Keys changed by the entry at ``index`` of a replica's applied stream; ``reset``
    means every key (a snapshot was installed). One shape for everything that follows
    applied writes: the core's caches, the Raft certificate keeper, cross-cluster
    replication."""

    @property
    def index(self) -> int: ...

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def reset(self) -> bool: ...


class PhysicalBackend(Protocol):
    """Untrusted key-value storage of ciphertext.

    Keys are ``/``-separated paths without a leading ``/``. ``list`` returns
    the immediate children of a prefix, sorted, with ``/`` appended to names
    that have children below them.
    """

    async def get(self, key: str) -> Entry | None: ...

    async def put(self, key: str, value: bytes) -> int: ...

    async def delete(self, key: str) -> None: ...

    async def list(self, prefix: str) -> list[str]: ...

    async def commit(self, ops: Sequence[TxnOp]) -> int:
        """Apply every op or none; raise ``RevisionMismatchError`` on a failed
        check. Returns the revision given to the writes."""
        ...

    async def close(self) -> None: ...


def validate_key(key: str) -> None:
    """Reject keys that cannot round-trip through every backend.

    The message never quotes the key: it holds internal ids (a mount's UUID, a
    token's cubbyhole id) that the caller's path does not reveal.
    """
    if not key or key.startswith("/") or key.endswith("/") or "//" in key:
        raise InvalidRequestError("invalid path: empty segment or leading or trailing '/'")
    if "." in key and any(part in (".", "..") for part in key.split("/")):
        raise InvalidRequestError("invalid path: '.' or '..' segment")
    if "\x00" in key:
        raise InvalidRequestError("invalid path: contains NUL")


def children_of(prefix: str, keys: Iterable[str]) -> list[str]:
    """Immediate children of ``prefix`` among ``keys`` (which all start with it)."""
    found: set[str] = set()
    for key in keys:
        rest = key[len(prefix) :]
        head, sep, _ = rest.partition("/")
        found.add(head + sep)
    return sorted(found)
