"""The immutable request value the core handles.

``api`` builds one per HTTP request; routing derives the backend's value with
``Request.routed`` instead of mutating and restoring fields.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sdk.record import record

__all__ = ["Operation", "Request", "RequestAuth"]


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
class RequestAuth:
    """Who is calling, as resolved by the pipeline from the client token."""

    token_key: str
    accessor: str
    policies: tuple[str, ...]
    display_name: str = ""
    entity_id: str = ""
    cubbyhole_id: str = ""
    token_type: str = "service"
    num_uses: int = 0
    namespace_id: str = "root"

    @property
    def is_root(self) -> bool:
        return "root" in self.policies


@record
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
    #: The namespace header on arrival; the resolved namespace path after routing.
    namespace: str = ""
    namespace_id: str = "root"
    remote_addr: str = ""
    wrap_ttl: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)
    mount_point: str = ""
    mount_accessor: str = ""
    auth: RequestAuth | None = None
    #: Whether the caller's policies grant ``sudo`` on this path (set by the pipeline).
    has_sudo: bool = False
    #: ``host:port`` of the standby that relayed this request here (its signature
    #: checked); empty for a request a client sent to this node. Audit entries carry it.
    forwarded_from: str = ""

    def routed(
        self,
        *,
        operation: Operation,
        path: str,
        namespace: str,
        namespace_id: str,
        mount_point: str,
        mount_accessor: str,
        auth: RequestAuth | None,
        has_sudo: bool,
    ) -> Request:
        """This request as a mount's backend gets it: the routing fields given, the
        client's copied. One construction, where ``dataclasses.replace`` per step
        cost several on every request; a new field must be copied here too."""
        return Request(
            operation=operation,
            path=path,
            data=self.data,
            id=self.id,
            client_token=self.client_token,
            namespace=namespace,
            namespace_id=namespace_id,
            remote_addr=self.remote_addr,
            wrap_ttl=self.wrap_ttl,
            headers=self.headers,
            mount_point=mount_point,
            mount_accessor=mount_accessor,
            auth=auth,
            has_sudo=has_sudo,
            forwarded_from=self.forwarded_from,
        )

    def __repr__(self) -> str:
        # The default repr would print the token; keep it out of tracebacks.
        return f"Request(operation={self.operation.value!r}, path={self.path!r}, id={self.id!r})"
