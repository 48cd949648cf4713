"""Request-field parsing shared by the identity endpoints, and the mount directory.

Metadata accepts the reference's two shapes (an object, or ``["k=v", ...]``)
and its limits, so a client that works against the reference gets the same
400s here instead of a silently different record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from node.logical.mount import MountEntry
from sdk.errors import InvalidRequestError

__all__ = ["MountDirectory", "metadata", "policy_list", "unique"]

_KEY = re.compile(r"[A-Za-z0-9=/+_-]+")
_MAX_PAIRS = 64
_MAX_KEY = 128
_MAX_VALUE = 512


def unique(items: Iterable[str]) -> tuple[str, ...]:
    """Without repeats or blanks, first occurrence kept."""
    return tuple(dict.fromkeys(item for item in items if item))


def policy_list(raw: list[str]) -> tuple[str, ...]:
    policies = unique(item.strip() for item in raw)
    if "root" in policies:
        raise InvalidRequestError("policies cannot contain root")
    return policies


def _pairs(raw: Any, name: str) -> dict[str, str]:
    if isinstance(raw, dict):
        pairs = raw
    elif isinstance(raw, list | str):
        pairs = {}
        for item in [raw] if isinstance(raw, str) else raw:
            if not isinstance(item, str) or "=" not in item:
                raise InvalidRequestError(
                    f"failed to parse {name}: expected key=value, got {item!r}"
                )
            key, _, value = item.partition("=")
            pairs[key] = value
    else:
        raise InvalidRequestError(f"failed to parse {name}: expected an object, got {raw!r}")
    parsed: dict[str, str] = {}
    for key, value in pairs.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidRequestError(f"failed to parse {name}: value of {key!r} must be a string")
        parsed[str(key)] = str(value)
    return parsed


def metadata(raw: Any, name: str = "metadata", *, custom: bool = False) -> dict[str, str]:
    """Validated key/value pairs: at most 64, keys of at most 128 characters.

    ``metadata`` keys are restricted to ``[A-Za-z0-9=/+_-]``; ``custom_metadata``
    keys and values need only be printable.
    """
    parsed = _pairs(raw, name)
    if len(parsed) > _MAX_PAIRS:
        raise InvalidRequestError(f"{name} cannot contain more than {_MAX_PAIRS} key/value pairs")
    for key, value in parsed.items():
        problem = ""
        if not key:
            problem = "key cannot be blank"
        elif len(key) > _MAX_KEY:
            problem = f"key is too long (limit: {_MAX_KEY} characters)"
        elif len(value) > _MAX_VALUE:
            problem = f"value is too long (limit: {_MAX_VALUE} characters)"
        elif custom and not (key.isprintable() and value.isprintable()):
            problem = "keys and values must be printable"
        elif not custom and not _KEY.fullmatch(key):
            problem = "key contains invalid characters"
        if problem:
            raise InvalidRequestError(f"invalid {name} pair ({key!r}, {value!r}): {problem}")
    return parsed


class MountDirectory:
    """The auth mounts of one namespace, by accessor.

    ``entries`` is the router's listing; ``None`` (a backend built without a
    router, in unit tests) accepts every accessor, with no type or path.
    """

    def __init__(self, namespace_id: str, entries: Callable[[], list[MountEntry]] | None) -> None:
        self._namespace_id = namespace_id
        self._entries = entries

    def find(self, accessor: str) -> MountEntry | None:
        if self._entries is None:
            return None
        for entry in self._entries():
            if (
                entry.accessor == accessor
                and entry.table == "auth"
                and entry.namespace_id == self._namespace_id
            ):
                return entry
        return None

    def require(self, accessor: str, *, allow_local: bool = True) -> MountEntry | None:
        """The mount, or a 400 when the accessor names no auth mount of this namespace."""
        if self._entries is None:
            return None
        found = self.find(accessor)
        if found is None:
            raise InvalidRequestError(f'invalid mount accessor "{accessor}"')
        if found.local and not allow_local:
            raise InvalidRequestError(f'mount accessor "{accessor}" is a local mount')
        return found

    def describe(self, accessor: str) -> dict[str, str]:
        """``mount_type`` and ``mount_path`` for a read, when the mount still exists."""
        found = self.find(accessor)
        if found is None:
            return {}
        return {"mount_type": found.type, "mount_path": f"auth/{found.path}"}
