"""The one error the configuration loader raises."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(Exception):
    """The configuration cannot be used; start-up must stop.

    Not a ``CofferError``: it never reaches an HTTP client, so it carries no
    status. The message always names the file and the key path, because the
    operator reading it has to find the line to fix.
    """
