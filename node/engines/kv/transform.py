"""Pure transformations of secret bodies: JSON merge patch and subkey skeletons."""

from __future__ import annotations

from typing import Any

__all__ = ["merge_patch", "subkeys"]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` removes a member, anything
    else (arrays included) replaces. Inputs are left untouched."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result


def subkeys(data: dict[str, Any], max_depth: int, depth: int = 1) -> dict[str, Any]:
    """``data`` with every value replaced by ``null`` but non-empty objects kept,
    down to ``max_depth`` levels (0 = all); deeper objects become ``null`` too,
    so no value ever leaks."""
    skeleton: dict[str, Any] = {}
    for name, value in data.items():
        deeper = max_depth == 0 or depth < max_depth
        if isinstance(value, dict) and value and deeper:
            skeleton[name] = subkeys(value, max_depth, depth + 1)
        else:
            skeleton[name] = None
    return skeleton
