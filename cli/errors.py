"""The one exception commands raise: a message already worded for the user.

``main`` prints it to stderr and exits with ``exit_code``, so commands never
print errors or call ``sys.exit`` themselves.
"""

from __future__ import annotations

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "CliError", "UsageError"]

EXIT_OK = 0
EXIT_ERROR = 1
"""A local failure: bad settings, unreadable input, an undecodable token."""
EXIT_USAGE = 2
"""A usage error, an error from the server, or a "no" answer (sealed, not found)."""


class CliError(Exception):
    """A failure to report as one message on stderr."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class UsageError(CliError):
    """Flags that parse but do not make sense together (exit 2, like argparse)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)
