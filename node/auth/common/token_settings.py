"""The ``token_*`` fields of SPEC.md, parsed once for every auth method.

Durations accept integers or duration strings; lists accept arrays or
comma-separated strings. Unset values read back as 0, an empty list, false
and ``default`` (token type), as the reference shows them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from node.framework import Field, FieldData, FieldType
from sdk.errors import InvalidRequestError

__all__ = ["TOKEN_FIELDS", "TokenSettings", "issued_token_type", "token_fields"]

_TYPES = ("default", "service", "batch", "default-service", "default-batch")


def token_fields() -> dict[str, Field]:
    return {
        "token_ttl": Field(FieldType.DURATION, "Incremental lifetime of issued tokens."),
        "token_max_ttl": Field(FieldType.DURATION, "Maximum lifetime of issued tokens."),
        "token_policies": Field(
            FieldType.COMMA_STRING_LIST, "Policies encoded onto issued tokens."
        ),
        "token_bound_cidrs": Field(
            FieldType.COMMA_STRING_LIST, "CIDR blocks that may log in and use the tokens."
        ),
        "token_explicit_max_ttl": Field(FieldType.DURATION, "Hard cap on token life."),
        "token_no_default_policy": Field(FieldType.BOOL, "Do not add the default policy."),
        "token_num_uses": Field(FieldType.INT, "Uses per token; 0 is unlimited."),
        "token_period": Field(FieldType.DURATION, "Period of issued tokens."),
        "token_type": Field(FieldType.STRING, "service, batch or default."),
    }


TOKEN_FIELDS = tuple(token_fields())


@dataclass(frozen=True, slots=True)
class TokenSettings:
    ttl: int = 0
    max_ttl: int = 0
    policies: list[str] = field(default_factory=list)
    bound_cidrs: list[str] = field(default_factory=list)
    explicit_max_ttl: int = 0
    no_default_policy: bool = False
    num_uses: int = 0
    period: int = 0
    type: str = "default"

    @classmethod
    def from_fields(cls, data: FieldData, current: TokenSettings | None = None) -> TokenSettings:
        """Apply the given ``token_*`` fields on top of ``current`` (update semantics)."""
        values = asdict(current or cls())
        for name in TOKEN_FIELDS:
            if data.given(name):
                values[name.removeprefix("token_")] = data.get(name)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        for name in ("ttl", "max_ttl", "explicit_max_ttl", "num_uses", "period"):
            if getattr(self, name) < 0:
                raise InvalidRequestError(f"token_{name} must not be negative")
        if self.max_ttl and self.ttl > self.max_ttl:
            raise InvalidRequestError("token_ttl must not be greater than token_max_ttl")
        if self.type not in _TYPES:
            raise InvalidRequestError(
                f"invalid token_type {self.type!r}: use one of {', '.join(_TYPES)}"
            )
        for cidr in self.bound_cidrs:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError as exc:
                raise InvalidRequestError(f"invalid CIDR in token_bound_cidrs: {cidr!r}") from exc

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> TokenSettings:
        return cls(**raw) if raw else cls()

    def public(self) -> dict[str, Any]:
        """The ``token_*`` keys as a config or user read shows them."""
        return {f"token_{name}": value for name, value in asdict(self).items()}

    def allows_address(self, address: str) -> bool:
        if not self.bound_cidrs:
            return True
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in ipaddress.ip_network(c, strict=False) for c in self.bound_cidrs)

    @property
    def token_type(self) -> str:
        """The concrete type: ``default``/``default-service`` mean service."""
        return "batch" if self.type in ("batch", "default-batch") else "service"


def issued_token_type(mount_type: str, method_type: str) -> str:
    """The type of a login's token: the auth mount's tuned ``token_type`` against
    the method's own, by the reference's rules.

    A mount tuned to ``service`` or ``batch`` overrides the method; a mount's
    ``default-service``/``default-batch`` gives way to a method that names a
    concrete type (or the other default), and decides when the method says
    ``default``.
    """
    if mount_type in ("service", "batch"):
        return mount_type
    if mount_type == "default-batch":
        return "batch" if method_type in ("default", "", "default-batch", "batch") else "service"
    return "service" if method_type in ("default", "", "default-service", "service") else "batch"
