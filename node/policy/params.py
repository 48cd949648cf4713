"""Request-body checks against a rule's parameter constraints.

Follows the reference's current matching: string values may glob with a
leading/trailing ``*``; other values must be deep-equal; a list (or a
comma-separated string) passes ``allowed_parameters`` only if every element
does, and trips ``denied_parameters`` if any element does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from node.policy.model import PathRule

__all__ = ["check_parameters"]

# Values the core lower-cases before use; compare them the same way so
# "ROOT" cannot slip past a denied "root".
_LOWERCASED_VALUES = frozenset({"policies", "token_policies"})


def check_parameters(rule: PathRule, data: Mapping[str, Any]) -> str | None:
    """``None`` if ``data`` satisfies ``rule``, else why not (never echoing values)."""
    if not (rule.required_parameters or rule.allowed_parameters or rule.denied_parameters):
        return None
    items = [(str(key).lower(), value) for key, value in data.items()]
    items = [(key, _normalise(key, value)) for key, value in items]
    present = {key for key, _ in items}
    for required in rule.required_parameters:
        if required not in present:
            return f'missing required parameter "{required}"'
    if not items:
        return None

    denied = rule.denied_parameters
    if "*" in denied:
        return "all parameters are denied"
    for key, value in items:
        values = denied.get(key)
        if values is not None and _denied(value, values):
            return f'parameter "{key}" has a denied value'

    allowed = rule.allowed_parameters
    if not allowed:
        return None
    allow_any_key = "*" in allowed
    for key, value in items:
        values = allowed.get(key)
        if values is None:
            if not allow_any_key:
                return f'parameter "{key}" is not allowed'
        elif not _allowed(value, values):
            return f'parameter "{key}" has a value that is not allowed'
    return None


def _normalise(key: str, value: Any) -> Any:
    if key not in _LOWERCASED_VALUES:
        return value
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, list):
        return [item.lower() if isinstance(item, str) else item for item in value]
    return value


def _allowed(value: Any, values: tuple[Any, ...]) -> bool:
    if not values or _in_list(value, values):
        return True
    pieces = _elements(value)
    return pieces is not None and all(_in_list(piece, values) for piece in pieces)


def _denied(value: Any, values: tuple[Any, ...]) -> bool:
    if not values or _in_list(value, values):
        return True
    pieces = _elements(value)
    return pieces is not None and any(_in_list(piece, values) for piece in pieces)


def _elements(value: Any) -> list[Any] | None:
    """A list's items, or a comma-separated string's trimmed parts."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str) and "," in value:
        return [part.strip() for part in value.split(",") if part.strip()]
    return None


def _in_list(value: Any, values: tuple[Any, ...]) -> bool:
    return any(_matches(value, candidate) for candidate in values)


def _matches(value: Any, candidate: Any) -> bool:
    if candidate is None or value is None:
        return candidate is None and value is None
    if isinstance(candidate, str):
        return isinstance(value, str) and _glob(candidate, value)
    return _deep_equal(candidate, value)


def _glob(pattern: str, value: str) -> bool:
    if len(pattern) < 2:
        return pattern == value
    starts, ends = pattern.startswith("*"), pattern.endswith("*")
    if starts and ends:
        return pattern[1:-1] in value
    if starts:
        return value.endswith(pattern[1:])
    if ends:
        return value.startswith(pattern[:-1])
    return pattern == value


def _deep_equal(a: Any, b: Any) -> bool:
    """Structural equality where ``True`` is not ``1`` and ``"1"`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)
