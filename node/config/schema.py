"""Coercion of raw pyhcl values, with errors located by file and key path.

Every helper takes a ``Where`` so that a bad value is reported as, for
example, ``config.hcl: listener "tcp": tls_disable: expected a boolean``.
Booleans and integers are accepted in the loose forms Vault accepts, because
existing Vault configs must load unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from node.config.errors import ConfigError
from node.framework.fields import parse_duration
from sdk.errors import InvalidRequestError

__all__ = [
    "Where",
    "as_block",
    "as_bool",
    "as_duration",
    "as_int",
    "as_str",
    "check_keys",
    "describe",
    "labelled_blocks",
    "optional",
]

T = TypeVar("T")

# Go's strconv.ParseBool, which Vault uses, is case-sensitive; being lenient on case costs nothing.
_TRUE = frozenset({"1", "t", "true"})
_FALSE = frozenset({"0", "f", "false"})


@dataclass(frozen=True, slots=True)
class Where:
    """A position in one config file that an error is reported against."""

    file: str
    path: tuple[str, ...] = ()

    def at(self, part: str) -> Where:
        return Where(self.file, (*self.path, part))

    def error(self, reason: str) -> ConfigError:
        return ConfigError(": ".join((self.file, *self.path, reason)))


def describe(value: Any) -> str:
    """Show a raw value the way the operator wrote it (``"yes"``, ``5``, ``true``)."""
    if isinstance(value, Mapping):
        return "a block"
    if isinstance(value, list):
        return "a list"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def as_str(value: Any, where: Where) -> str:
    if isinstance(value, str):
        return value
    raise where.error(f"expected a string, got {describe(value)}")


def as_bool(value: Any, where: Where) -> bool:
    """A boolean as Vault's ``parseutil.ParseBool`` reads it: any int, or "true"/"1"/"t"…"""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
    raise where.error(f"expected a boolean, got {describe(value)}")


def as_int(value: Any, where: Where) -> int:
    """An integer, also from a numeric string or an integral float (HCL's ``1e6``)."""
    if isinstance(value, bool):
        raise where.error(f"expected an integer, got {describe(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise where.error(f"expected an integer, got {describe(value)}")


def as_duration(value: Any, where: Where) -> int:
    """Whole seconds from ``"768h"``, ``"1h30m"``, ``"10s"`` or a plain number of seconds."""
    try:
        seconds = parse_duration(value, ": ".join(where.path) or "value")
    except InvalidRequestError as exc:
        raise ConfigError(f"{where.file}: {'; '.join(exc.messages)}") from None
    if seconds < 0:
        raise where.error(f"must not be negative, got {describe(value)}")
    return seconds


def as_block(value: Any, where: Where) -> dict[str, Any]:
    """An unlabelled block; JSON may wrap it in a one-element list."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    elif isinstance(value, list) and value:
        raise where.error("may appear only once")
    if isinstance(value, dict):
        return value
    raise where.error(f"expected a block, got {describe(value)}")


def labelled_blocks(value: Any, where: Where) -> list[tuple[str, dict[str, Any]]]:
    """Flatten every shape pyhcl yields for ``name "label" { ... }`` into (label, body) pairs.

    HCL gives ``{label: body}``; JSON may also give ``[{label: body}, ...]`` or
    ``{label: [body, ...]}``. Repeated HCL blocks with the same label arrive
    already merged into one body — pyhcl gives no way to tell them apart.
    """
    name = where.path[-1]
    shape = f'expected a labelled block such as {name} "<type>" {{ ... }}'
    found: list[tuple[str, dict[str, Any]]] = []
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, dict):
            raise where.error(f"{shape}, got {describe(item)}")
        for label, body in item.items():
            for one in body if isinstance(body, list) else [body]:
                if not isinstance(one, dict):
                    raise where.error(f"{shape}, got {label} = {describe(one)}")
                found.append((label, one))
    return found


def check_keys(
    body: Mapping[str, Any],
    where: Where,
    allowed: Collection[str],
    required: Collection[str] = (),
) -> None:
    """Reject unknown keys (typos must not be silently ignored) and missing required ones."""
    for key in body:
        if key not in allowed:
            raise where.error(f'unknown key "{key}"')
    for key in required:
        if key not in body:
            raise where.error(f'"{key}" is required')


def optional(
    body: Mapping[str, Any],
    key: str,
    where: Where,
    coerce: Callable[[Any, Where], T],
    default: T,
) -> T:
    """``body[key]`` coerced, or ``default`` when the key is absent."""
    if key not in body:
        return default
    return coerce(body[key], where.at(key))
