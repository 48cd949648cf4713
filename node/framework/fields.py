"""Typed request fields and their lenient input forms (as the reference accepts)."""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sdk.durations import UNIT_SECONDS, UNITS
from sdk.errors import InvalidRequestError

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_DURATION_SECONDS",
    "Field",
    "FieldData",
    "FieldType",
    "parse_duration",
    "to_int",
]

#: Integers are Go ``int`` (64-bit) in the reference; anything wider is refused
#: here, once, rather than overflowing later in time arithmetic or storage.
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1
#: The longest duration a Go ``time.Duration`` holds, in seconds (~292 years).
MAX_DURATION_SECONDS: Final = (2**63 - 1) // 10**9


class FieldType(enum.StrEnum):
    STRING = "string"
    INT = "int"
    BOOL = "bool"
    DURATION = "duration"
    MAP = "map"
    STRING_LIST = "string_list"
    COMMA_STRING_LIST = "comma_string_list"
    INT_LIST = "int_list"
    ANY = "any"


_OPENAPI_TYPES: dict[FieldType, dict[str, Any]] = {
    FieldType.STRING: {"type": "string"},
    FieldType.INT: {"type": "integer"},
    FieldType.BOOL: {"type": "boolean"},
    FieldType.DURATION: {"type": "string", "format": "duration"},
    FieldType.MAP: {"type": "object"},
    FieldType.STRING_LIST: {"type": "array", "items": {"type": "string"}},
    FieldType.COMMA_STRING_LIST: {"type": "array", "items": {"type": "string"}},
    FieldType.INT_LIST: {"type": "array", "items": {"type": "integer"}},
    FieldType.ANY: {},
}


_DEFAULT_BOUNDS: dict[FieldType, tuple[int, int]] = {
    FieldType.INT: (INT_MIN, INT_MAX),
    FieldType.INT_LIST: (INT_MIN, INT_MAX),
    FieldType.DURATION: (-MAX_DURATION_SECONDS, MAX_DURATION_SECONDS),
}


@dataclass(frozen=True, slots=True)
class Field:
    """One typed request field. Numeric fields (``INT``, ``INT_LIST``,
    ``DURATION``) are bounded: ``minimum``/``maximum`` narrow the type's
    default range (64-bit integers; durations a Go ``time.Duration`` holds)."""

    type: FieldType
    description: str = ""
    default: Any = None
    required: bool = False
    minimum: int | None = None
    maximum: int | None = None

    def bounds(self) -> tuple[int, int] | None:
        """The inclusive range of a numeric field, None for the other types."""
        default = _DEFAULT_BOUNDS.get(self.type)
        if default is None:
            return None
        low = default[0] if self.minimum is None else max(default[0], self.minimum)
        high = default[1] if self.maximum is None else min(default[1], self.maximum)
        return low, high

    def openapi(self) -> dict[str, Any]:
        schema = dict(_OPENAPI_TYPES[self.type])
        bounds = self.bounds()
        if bounds is not None and self.type is not FieldType.DURATION:
            target = schema["items"] if self.type is FieldType.INT_LIST else schema
            target = dict(target)
            target["minimum"], target["maximum"] = bounds
            if self.type is FieldType.INT_LIST:
                schema["items"] = target
            else:
                schema = target
        if self.description:
            schema["description"] = self.description
        if self.default is not None:
            schema["default"] = self.default
        return schema


_DURATION_PART = re.compile(rf"(\d+(?:\.\d+)?)({UNITS})")


def parse_duration(value: Any, name: str = "value") -> int:
    """Seconds from an integer, a numeric string, or a Go-style duration, no
    longer than a Go ``time.Duration`` holds (either sign)."""
    return _bounded(_duration_seconds(value, name), name, MAX_DURATION_SECONDS, "s")


def _shown(value: Any) -> str:
    """A value for an error message, cut short (a 400 should not echo a megabyte)."""
    text = repr(value)
    return text if len(text) <= 64 else text[:60] + "..."


def _bounded(number: int, name: str, limit: int, unit: str = "") -> int:
    if not -limit <= number <= limit:
        raise InvalidRequestError(f"{name}: out of range (at most {limit}{unit} either way)")
    return number


def _check_range(number: int, name: str, bounds: tuple[int, int]) -> int:
    low, high = bounds
    if not low <= number <= high:
        raise InvalidRequestError(f"{name}: out of range (must be between {low} and {high})")
    return number


def _duration_seconds(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise InvalidRequestError(f"{name}: expected a duration, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            if re.fullmatch(r"-?\d+", text):
                return int(text)
            sign = -1 if text.startswith("-") else 1
            body = text.lstrip("+-")
            parts = _DURATION_PART.findall(body)
            if body and "".join(n + u for n, u in parts) == body:
                return sign * int(sum(float(n) * UNIT_SECONDS[u] for n, u in parts))
        except (ValueError, OverflowError):
            # too many digits for int(), or a float that overflowed to infinity
            pass
    raise InvalidRequestError(f"{name}: invalid duration {_shown(value)}")


def to_int(value: Any, name: str, bounds: tuple[int, int] = (INT_MIN, INT_MAX)) -> int:
    """An integer from a JSON number or a numeric string, within ``bounds`` (a 400 naming
    ``name`` otherwise): the one conversion every integer input goes through."""
    return _check_range(_to_int(value, name), name, bounds)


def _to_int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise InvalidRequestError(f"{name}: expected an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        try:
            return int(value)
        except ValueError:  # more digits than int() converts
            pass
    raise InvalidRequestError(f"{name}: expected an integer, got {_shown(value)}")


def _to_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "t"):
        return True
    if isinstance(value, str) and value.lower() in ("false", "0", "f", ""):
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InvalidRequestError(f"{name}: expected a boolean, got {_shown(value)}")


def _to_string_list(value: Any, name: str, comma: bool) -> list[str]:
    if isinstance(value, str):
        if not comma:
            return [value]
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item.strip() for item in value] if comma else list(value)
    raise InvalidRequestError(f"{name}: expected a list of strings, got {_shown(value)}")


def _bounds(field: Field) -> tuple[int, int]:
    bounds = field.bounds()
    assert bounds is not None  # only called for numeric fields
    return bounds


def convert(field: Field, value: Any, name: str) -> Any:
    """Convert raw JSON input to the field's type or raise a 400."""
    match field.type:
        case FieldType.STRING:
            if isinstance(value, str):
                return value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return str(value)
            raise InvalidRequestError(f"{name}: expected a string, got {_shown(value)}")
        case FieldType.INT:
            return to_int(value, name, _bounds(field))
        case FieldType.BOOL:
            return _to_bool(value, name)
        case FieldType.DURATION:
            return _check_range(parse_duration(value, name), name, _bounds(field))
        case FieldType.MAP:
            if isinstance(value, dict):
                return value
            raise InvalidRequestError(f"{name}: expected an object, got {_shown(value)}")
        case FieldType.STRING_LIST:
            return _to_string_list(value, name, comma=False)
        case FieldType.COMMA_STRING_LIST:
            return _to_string_list(value, name, comma=True)
        case FieldType.INT_LIST:
            items = value.split(",") if isinstance(value, str) else value
            if not isinstance(items, list):
                items = [items]
            return [to_int(item, name, _bounds(field)) for item in items if item != ""]
        case _:
            return value


#: Field types whose value is taken as given when it has exactly this Python type.
_AS_GIVEN: dict[FieldType, type] = {FieldType.STRING: str, FieldType.MAP: dict}


class FieldData:
    """Validated request fields, with defaults for those not given."""

    def __init__(self, schema: Mapping[str, Field], raw: Mapping[str, Any]) -> None:
        self._schema = schema
        self.raw = raw
        self._values: dict[str, Any] = {}
        values = self._values
        for name, field in schema.items():
            value = raw.get(name)
            if value is not None:
                # The common cases inline: a string or an object where one is expected.
                inline = _AS_GIVEN.get(field.type)
                if inline is not None and type(value) is inline:
                    values[name] = value
                else:
                    values[name] = convert(field, value, name)
            elif field.required:
                raise InvalidRequestError(f"missing required field {name!r}")

    @functools.cached_property
    def unknown(self) -> list[str]:
        """Given fields the schema does not know (sorted); worked out only if asked:
        a write builds its fields twice (existence check, handler), warns once."""
        return sorted(k for k in self.raw if k not in self._schema)

    def get(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        return self._schema[name].default

    def given(self, name: str) -> bool:
        return name in self._values
