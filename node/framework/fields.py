"""Typed request fields and their lenient input forms (as the reference accepts)."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from node.durations import UNIT_SECONDS, UNITS
from node.errors import InvalidRequestError

__all__ = ["Field", "FieldData", "FieldType", "parse_duration"]


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


@dataclass(frozen=True, slots=True)
class Field:
    type: FieldType
    description: str = ""
    default: Any = None
    required: bool = False

    def openapi(self) -> dict[str, Any]:
        schema = dict(_OPENAPI_TYPES[self.type])
        if self.description:
            schema["description"] = self.description
        if self.default is not None:
            schema["default"] = self.default
        return schema


_DURATION_PART = re.compile(rf"(\d+(?:\.\d+)?)({UNITS})")


def parse_duration(value: Any, name: str = "value") -> int:
    """Seconds from an integer, a numeric string, or a Go-style duration."""
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
    raise InvalidRequestError(f"{name}: invalid duration {value!r}")


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
    raise InvalidRequestError(f"{name}: expected an integer, got {value!r}")


def _to_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "t"):
        return True
    if isinstance(value, str) and value.lower() in ("false", "0", "f", ""):
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InvalidRequestError(f"{name}: expected a boolean, got {value!r}")


def _to_string_list(value: Any, name: str, comma: bool) -> list[str]:
    if isinstance(value, str):
        if not comma:
            return [value]
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item.strip() for item in value] if comma else list(value)
    raise InvalidRequestError(f"{name}: expected a list of strings, got {value!r}")


def convert(field: Field, value: Any, name: str) -> Any:
    """Convert raw JSON input to the field's type or raise a 400."""
    match field.type:
        case FieldType.STRING:
            if isinstance(value, str):
                return value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return str(value)
            raise InvalidRequestError(f"{name}: expected a string, got {value!r}")
        case FieldType.INT:
            return _to_int(value, name)
        case FieldType.BOOL:
            return _to_bool(value, name)
        case FieldType.DURATION:
            return parse_duration(value, name)
        case FieldType.MAP:
            if isinstance(value, dict):
                return value
            raise InvalidRequestError(f"{name}: expected an object, got {value!r}")
        case FieldType.STRING_LIST:
            return _to_string_list(value, name, comma=False)
        case FieldType.COMMA_STRING_LIST:
            return _to_string_list(value, name, comma=True)
        case FieldType.INT_LIST:
            items = value.split(",") if isinstance(value, str) else value
            if not isinstance(items, list):
                items = [items]
            return [_to_int(item, name) for item in items if item != ""]
        case _:
            return value


class FieldData:
    """Validated request fields, with defaults for those not given."""

    def __init__(self, schema: Mapping[str, Field], raw: Mapping[str, Any]) -> None:
        self._schema = schema
        self.raw = raw
        self._values: dict[str, Any] = {}
        for name, field in schema.items():
            if name in raw and raw[name] is not None:
                self._values[name] = convert(field, raw[name], name)
            elif field.required:
                raise InvalidRequestError(f"missing required field {name!r}")
        self.unknown = sorted(k for k in raw if k not in schema)

    def get(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        return self._schema[name].default

    def given(self, name: str) -> bool:
        return name in self._values
