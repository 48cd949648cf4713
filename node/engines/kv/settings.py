"""Validation of the settings shared by ``config`` and ``metadata/:path``."""

from __future__ import annotations

import json
from typing import Any

from node.framework import Field, FieldType
from sdk.errors import InvalidRequestError

__all__ = [
    "CAS_IGNORED_WARNING",
    "MAX_DURATION_SECONDS",
    "SETTING_FIELDS",
    "check_custom_metadata",
    "check_duration",
    "check_max_versions",
    "custom_metadata_values",
]

#: The longest duration the reference can hold (a Go ``time.Duration``), in seconds;
#: longer ones would overflow its deletion-time arithmetic.
MAX_DURATION_SECONDS = (2**63 - 1) // 10**9
CAS_IGNORED_WARNING = (
    '"cas_required" set to false, but is mandated by backend config. This value will be ignored.'
)
_MAX_KEYS = 64
_MAX_KEY_LENGTH = 128
_MAX_VALUE_LENGTH = 512
_PREFIX = "custom_metadata validation failed"

SETTING_FIELDS: dict[str, Field] = {
    "max_versions": Field(
        FieldType.INT,
        "Versions kept per key; the larger of the key's and the mount's value applies "
        "(10 when both are 0). Older versions are removed on the next write.",
    ),
    "cas_required": Field(
        FieldType.BOOL, "Require options.cas on every write (either setting enforces it)."
    ),
    "delete_version_after": Field(
        FieldType.DURATION,
        "Soft-delete each new version after this long (seconds or Go duration such as "
        '"1h30m"). 0 clears the setting; the smaller non-zero of key and mount applies.',
    ),
}


def check_max_versions(value: int) -> int:
    if value < 0:
        raise InvalidRequestError("max_versions must not be negative")
    return value


def check_duration(value: int) -> int:
    """A non-negative ``delete_version_after`` the deletion-time arithmetic can hold."""
    if value < 0:
        raise InvalidRequestError(f"delete_version_after: cannot provide negative value {value}")
    if value > MAX_DURATION_SECONDS:
        raise InvalidRequestError(f"delete_version_after must be at most {MAX_DURATION_SECONDS}s")
    return value


def _as_string(key: str, value: Any) -> str:
    """Scalars become strings as the reference's weak decoding does; a missing
    value is empty (and then fails the length check)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    raise InvalidRequestError(f"{_PREFIX}: value for key {json.dumps(key)} must be a string")


def custom_metadata_values(raw: dict[str, Any], *, keep_nulls: bool) -> dict[str, str | None]:
    """String values of ``custom_metadata``; with ``keep_nulls`` (merge patch) a
    ``null`` stays ``None``, meaning "remove this key"."""
    return {k: None if keep_nulls and v is None else _as_string(k, v) for k, v in raw.items()}


def _byte_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def check_custom_metadata(values: dict[str, str]) -> None:
    """At most 64 keys; keys 1-128 and values 1-512 bytes; printable only.
    Every problem is reported, one error message each."""
    if len(values) > _MAX_KEYS:
        raise InvalidRequestError(
            f"{_PREFIX}: payload must contain at most {_MAX_KEYS} keys, provided {len(values)}"
        )
    errors: list[str] = []
    for key, value in values.items():
        quoted = json.dumps(key)
        if not 0 < _byte_length(key) <= _MAX_KEY_LENGTH:
            errors.append(
                f"{_PREFIX}: length of key {quoted} is {_byte_length(key)} "
                f"but must be 0 < len(key) <= {_MAX_KEY_LENGTH}"
            )
        if not 0 < _byte_length(value) <= _MAX_VALUE_LENGTH:
            errors.append(
                f"{_PREFIX}: length of value for key {quoted} is {_byte_length(value)} "
                f"but must be 0 < len(value) <= {_MAX_VALUE_LENGTH}"
            )
        if not key.isprintable():
            errors.append(f"{_PREFIX}: key {quoted} contains unprintable characters")
        if not value.isprintable():
            errors.append(f"{_PREFIX}: value for key {quoted} contains unprintable characters")
    if errors:
        raise InvalidRequestError(*errors)
