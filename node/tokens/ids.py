"""Random identifiers in the reference's shapes."""

from __future__ import annotations

import secrets
import string

__all__ = ["SERVICE_TOKEN_PREFIX", "TOKEN_LENGTH", "new_accessor", "new_token_id", "random_base62"]

_BASE62 = string.ascii_letters + string.digits
SERVICE_TOKEN_PREFIX = "hvs."
#: Length of a service token; the generate-root one-time password matches it.
TOKEN_LENGTH = len(SERVICE_TOKEN_PREFIX) + 24


def random_base62(length: int) -> str:
    return "".join(secrets.choice(_BASE62) for _ in range(length))


def new_token_id() -> str:
    return SERVICE_TOKEN_PREFIX + random_base62(TOKEN_LENGTH - len(SERVICE_TOKEN_PREFIX))


def new_accessor() -> str:
    return random_base62(24)
