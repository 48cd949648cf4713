"""Replace every string value of a structure with its HMAC, as the reference does.

Only values are hashed, never keys; numbers, booleans and nulls stay as they
are (they are not what a secret looks like, and keeping them keeps the entry
useful). The input is never modified: a hashed copy is returned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["elide_list", "hash_values"]


def hash_values(value: Any, hmac: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return hmac(value)
    if isinstance(value, dict):
        return {key: hash_values(item, hmac) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [hash_values(item, hmac) for item in value]
    return value


def elide_list(data: dict[str, Any]) -> dict[str, Any]:
    """A list response with ``keys`` replaced by their count and ``key_info`` by its
    size (``elide_list_responses``): long listings stay out of the log."""
    elided = dict(data)
    if isinstance(elided.get("keys"), list):
        elided["keys"] = len(elided["keys"])
    if isinstance(elided.get("key_info"), dict):
        elided["key_info"] = len(elided["key_info"])
    return elided
