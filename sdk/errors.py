"""One tree of errors for the whole core.

Every error carries the HTTP status it maps to, so ``api`` translates by
exception class (through ``status``), never by message text.
"""

from __future__ import annotations

__all__ = [
    "AlreadyInitializedError",
    "CofferError",
    "ConflictError",
    "InvalidRequestError",
    "MethodNotAllowedError",
    "NotInitializedError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "ReadOnlyError",
    "RevisionMismatchError",
    "SealedError",
    "StorageError",
    "UnsupportedPathError",
]


class CofferError(Exception):
    """Base of every error the core raises on purpose."""

    status = 500

    def __init__(self, *messages: str, warnings: list[str] | None = None) -> None:
        super().__init__(*messages)
        self.messages = [m for m in messages if m]
        self.warnings = warnings or []


class InvalidRequestError(CofferError):
    """The request is malformed or its parameters are invalid."""

    status = 400


class AlreadyInitializedError(InvalidRequestError):
    """``sys/init`` on a server that already has a seal configuration."""


class PermissionDeniedError(CofferError):
    """Missing, invalid or insufficient client token."""

    status = 403

    def __init__(self, *messages: str) -> None:
        super().__init__(*(messages or ("permission denied",)))


class UnsupportedPathError(CofferError):
    """No route, mount or entry at this path."""

    status = 404


class MethodNotAllowedError(CofferError):
    """The path exists but does not support this operation."""

    status = 405


class ConflictError(CofferError):
    """The target is in a state that forbids the change (a namespace with children)."""

    status = 409


class PayloadTooLargeError(CofferError):
    """The request body exceeds the listener's ``max_request_size``."""

    status = 413


class NotInitializedError(CofferError):
    """The server has no seal configuration yet."""

    status = 503

    def __init__(self, *messages: str) -> None:
        super().__init__(*(messages or ("server is not yet initialized",)))


class SealedError(CofferError):
    """The barrier is sealed; nothing but the sealed-safe endpoints works."""

    status = 503

    def __init__(self, *messages: str) -> None:
        super().__init__(*(messages or ("server is sealed",)))


class ReadOnlyError(CofferError):
    """A write to storage that is read-only here: a standby handling a request.

    The pipeline turns it into a forward to the active node; it reaches a
    client only where no forward is possible.
    """

    status = 503

    def __init__(self, *messages: str) -> None:
        super().__init__(*(messages or ("cannot write to readonly storage",)))


class StorageError(CofferError):
    """The physical backend failed; the request is not acknowledged."""

    status = 500


class RevisionMismatchError(CofferError):
    """A transaction's per-key revision check failed; nothing was applied."""

    status = 409

    def __init__(self, key: str, expected: int, actual: int) -> None:
        # The key stays out of the message (it may reach a client as a 409).
        super().__init__(f"revision check failed: expected {expected}, found {actual}")
        self.key = key
        self.expected = expected
        self.actual = actual
