"""Request fields shared by the token store's lookup, renew and revoke paths."""

from __future__ import annotations

from node.framework import Field, FieldType

__all__ = ["ACCESSOR", "INCREMENT", "TOKEN"]

TOKEN = {"token": Field(FieldType.STRING, "The token.")}
ACCESSOR = {"accessor": Field(FieldType.STRING, "The token's accessor.")}
INCREMENT = {"increment": Field(FieldType.DURATION, "Seconds to extend the TTL by.", 0)}
