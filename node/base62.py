"""Random base62 strings: token bodies, accessors, namespace ids, generate-root OTPs.

A leaf (stdlib only), so the packages that mint identifiers need not import
each other for it. Drawn with :mod:`secrets`: many of these values are
credentials, so they never come from the pre-fetched pool (``random_pool``).
"""

from __future__ import annotations

import secrets
import string

__all__ = ["random_base62"]

_BASE62 = string.ascii_letters + string.digits


def random_base62(length: int) -> str:
    return "".join(secrets.choice(_BASE62) for _ in range(length))
