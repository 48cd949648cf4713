"""The immutable request value the core handles.

``api`` builds one per HTTP request; routing derives new values with
``dataclasses.replace`` instead of mutating and restoring fields.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Operation", "Request"]


class Operation(enum.StrEnum):
    """Logical operation, derived from the HTTP method (and ``?list=true``)."""

    READ = "read"
    CREATE = "create"
    UPDATE = "update"
    PATCH = "patch"
    DELETE = "delete"
    LIST = "list"
    HELP = "help"
    HEADER = "header"


@dataclass(frozen=True, slots=True)
class Request:
    """One client request as the core sees it.

    ``path`` is relative to the namespace and has no ``/v1/`` prefix.
    ``client_token`` is the raw token from the header; it never reaches logs.
    """

    operation: Operation
    path: str
    data: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""
    client_token: str = ""
    namespace: str = ""
    remote_addr: str = ""
    wrap_ttl: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)
    mount_point: str = ""

    def __repr__(self) -> str:
        # The default repr would print the token; keep it out of tracebacks.
        return f"Request(operation={self.operation.value!r}, path={self.path!r}, id={self.id!r})"
