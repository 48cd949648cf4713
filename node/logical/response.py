"""The response value the core returns; ``api`` renders it as the envelope."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sdk.record import record

__all__ = ["Auth", "Login", "Response", "WrapInfo"]


@dataclass(frozen=True, slots=True)
class Auth:
    """The ``auth`` block of a login or token-creation response."""

    client_token: str
    accessor: str
    policies: list[str]
    token_policies: list[str]
    identity_policies: list[str] = field(default_factory=list)
    external_namespace_policies: dict[str, list[str]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    display_name: str = ""
    lease_duration: int = 0
    renewable: bool = False
    entity_id: str = ""
    token_type: str = "service"
    orphan: bool = False
    num_uses: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "client_token": self.client_token,
            "accessor": self.accessor,
            "policies": self.policies,
            "token_policies": self.token_policies,
            "identity_policies": self.identity_policies,
            "external_namespace_policies": self.external_namespace_policies,
            "metadata": self.metadata,
            "display_name": self.display_name,
            "lease_duration": self.lease_duration,
            "renewable": self.renewable,
            "entity_id": self.entity_id,
            "token_type": self.token_type,
            "orphan": self.orphan,
            "num_uses": self.num_uses,
        }


@dataclass(frozen=True, slots=True)
class Login:
    """What an auth method hands the core after checking credentials.

    The method decides *who* (alias name, groups) and *what* (policies and the
    token settings of its config, user or role); the core mints the token,
    links the alias to an identity entity and applies the mount's TTL limits.
    ``token`` is a ``node.auth.common.TokenSettings`` (typed loosely here so
    ``node.logical`` stays free of auth imports).
    """

    alias_name: str
    policies: list[str]
    token: Any
    display_name: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    alias_metadata: dict[str, str] = field(default_factory=dict)
    #: Names of groups in the external system (become group aliases on this mount).
    group_aliases: list[str] = field(default_factory=list)
    #: Kept with the token (in the barrier, never shown) for the method's renewal,
    #: as the reference's ``InternalData``.
    internal_data: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WrapInfo:
    """The ``wrap_info`` block that replaces ``data`` in a wrapped response."""

    token: str
    accessor: str
    ttl: int
    creation_time: str
    creation_path: str
    wrapped_accessor: str = ""


@record
class Response:
    """What a handler produced.

    ``raw`` set means the body is not the envelope (health, seal-status, help,
    metrics) and is sent as given; ``status`` overrides the derived code
    (200 with a body or warnings, 204 without).
    """

    data: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    auth: Auth | None = None
    wrap_info: WrapInfo | None = None
    #: Set by auth methods on a successful login; the pipeline turns it into ``auth``.
    login: Login | None = None
    lease_id: str = ""
    lease_duration: int = 0
    renewable: bool = False
    status: int | None = None
    raw: Any = None
    raw_content_type: str = "application/json"
    top_level_data: bool = False

    @property
    def is_empty(self) -> bool:
        return (
            self.data is None
            and not self.warnings
            and self.auth is None
            and self.wrap_info is None
            and self.login is None
            and self.raw is None
        )
