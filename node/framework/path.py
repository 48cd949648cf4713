"""One row of a backend's path table."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from node.framework.fields import Field, FieldData
from node.logical.request import Operation, Request
from node.logical.response import Response

__all__ = ["ExistenceCheck", "Handler", "Path", "PathGroup"]

Handler = Callable[[Request, FieldData], Awaitable[Response | None]]
ExistenceCheck = Callable[[Request, FieldData], Awaitable[bool]]


@dataclass(frozen=True)
class Path:
    """A regex over the mount-relative path, with named groups as fields."""

    pattern: str
    operations: Mapping[Operation, Handler]
    fields: Mapping[str, Field] = field(default_factory=dict)
    summary: str = ""
    description: str = ""
    exists: ExistenceCheck | None = None
    unauthenticated: bool = False
    sudo: bool = False
    #: The body is user data (KV v1), so unknown keys are not warned about.
    free_form: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile(self.pattern))

    def match(self, path: str) -> re.Match[str] | None:
        regex: re.Pattern[str] = object.__getattribute__(self, "_regex")
        return regex.fullmatch(path)


class PathGroup(Protocol):
    """One concern's rows of a backend's table: the object holds what its
    handlers need, ``paths()`` declares each row (pattern, fields, operations
    bound to its methods, help), so a row is read in one place. A backend
    is the concatenation of its groups' rows, in order (the first match wins)."""

    def paths(self) -> list[Path]: ...
