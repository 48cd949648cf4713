"""A device's salt and the identified HMAC it writes in place of secrets.

Each device gets its own random salt, stored with the audit table in the
barrier, so a value hashes the same on every node of the cluster (an operator
can look one up with ``sys/audit-hash``) yet differently per device.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["PREFIX", "Salt", "new_salt"]

#: What every hashed value starts with, as the reference writes it.
PREFIX = "hmac-sha256:"


def new_salt() -> str:
    return secrets.token_hex(32)


class Salt:
    def __init__(self, value: str) -> None:
        self._key = value.encode()

    def hmac(self, value: str) -> str:
        """``hmac-sha256:<hex>`` of ``value`` under this salt."""
        digest = hmac.new(self._key, value.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return PREFIX + digest.hexdigest()

    def __repr__(self) -> str:
        return "Salt(<redacted>)"
