"""Read-only storage while a standby handles a request (Vault's ``ErrReadOnly``).

A standby answers from its replica, but every change belongs to the active
node: a write a standby made while answering a request would race the active
node's own view of that data (caches, leases, use counts). So the pipeline
handles a request on a standby inside :func:`read_only`, and every storage
view (and the barrier below them) refuses a write there with
:class:`~sdk.errors.ReadOnlyError`; the pipeline then hands the whole request
to the active node instead. The scope remembers the refusal, so a handler
that swallows the error cannot make a half-done request look done.

A context variable rather than a flag on the views: a node's role changes
while its mounts (and their views) stay, and only request handling is
read-only. The cluster's own bookkeeping on a standby (its node record, sync
markers) writes below the barrier, through Raft, and is not in a scope.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from sdk.errors import ReadOnlyError
from sdk.physical import Check, TxnOp

__all__ = ["ReadOnlyScope", "check_writable", "check_writes", "read_only"]


@dataclass(slots=True)
class ReadOnlyScope:
    """One read-only request: the first key whose write was refused, if any."""

    refused: str = ""
    #: Keys that may still be written (a performance secondary's local data); None: none.
    allowed: Callable[[str], bool] | None = None


_SCOPE: ContextVar[ReadOnlyScope | None] = ContextVar("coffer_read_only", default=None)


@contextmanager
def read_only(allowed: Callable[[str], bool] | None = None) -> Iterator[ReadOnlyScope]:
    """Storage writes in this context (and tasks started from it) are refused,
    except to keys ``allowed`` accepts."""
    scope = ReadOnlyScope(allowed=allowed)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def check_writable(key: str) -> None:
    """Raise :class:`ReadOnlyError` (and note ``key``) inside a read-only scope."""
    scope = _SCOPE.get()
    if scope is not None and not (scope.allowed is not None and scope.allowed(key)):
        scope.refused = scope.refused or key
        raise ReadOnlyError()


def check_writes(ops: Sequence[TxnOp]) -> None:
    """:func:`check_writable` for a transaction (checks alone write nothing)."""
    for op in ops:
        if not isinstance(op, Check):
            check_writable(op.key)
