"""The method's configuration: which provider to call and the token settings.

The provider's origin is ``https://{org_name}.{base_url}`` (``okta.com`` when
``base_url`` is empty), as the reference builds it; a ``base_url`` containing
``://`` is the origin itself, which is how on-premises and test providers are
reached. Both are validated on write so a stored config always yields a URL
whose host is exactly the one configured.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from node.auth.common.token_settings import TokenSettings, token_fields
from node.framework import Field, FieldData, FieldType
from sdk.errors import InvalidRequestError

__all__ = [
    "DEFAULT_BASE_URL",
    "MFA_BYPASS_WARNING",
    "NO_API_TOKEN_WARNING",
    "IdpConfig",
    "config_fields",
    "origin",
]

DEFAULT_BASE_URL = "okta.com"

MFA_BYPASS_WARNING = (
    "identity provider MFA bypass is configured. In addition to ignoring the provider's "
    "MFA requests, certain other account statuses will not be seen, such as "
    "PASSWORD_EXPIRED. Authentication will succeed in these cases."
)
NO_API_TOKEN_WARNING = (
    "No api_token is configured. Provider group membership will not be queried during "
    "login, so only policies from locally-defined users and groups will apply."
)

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_LABELS = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_HOST_PORT = re.compile(rf"{_LABELS.pattern}(?::\d{{1,5}})?")


def origin(org_name: str, base_url: str) -> str:
    """Where the provider's API lives (no trailing slash)."""
    if "://" in base_url:
        return base_url.rstrip("/")
    return f"https://{org_name}.{base_url or DEFAULT_BASE_URL}"


def _check(org_name: str, base_url: str) -> None:
    if not org_name:
        raise InvalidRequestError("org_name is missing")
    if "://" in base_url:
        parts = urlsplit(base_url)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.username is not None
            or parts.password is not None
            or parts.query
            or parts.fragment
        ):
            raise InvalidRequestError(
                f"error parsing given base_url {base_url!r}: expected http(s)://host[:port][/path]"
            )
        try:
            parts.port  # noqa: B018 - raises on an invalid port
        except ValueError:
            raise InvalidRequestError(f"error parsing given base_url {base_url!r}") from None
        return
    if base_url and not _HOST_PORT.fullmatch(base_url):
        raise InvalidRequestError(
            f"error parsing given base_url {base_url!r}: expected a domain name such as okta.com"
        )
    if not _LABELS.fullmatch(org_name):
        raise InvalidRequestError(
            f"invalid org_name {org_name!r}: it becomes part of the provider's host name"
        )


def config_fields() -> dict[str, Field]:
    fields = {
        "org_name": Field(FieldType.STRING, "Organization name used in calls to the provider."),
        "api_token": Field(
            FieldType.STRING, "Provider API token, needed to look up group membership."
        ),
        "base_url": Field(
            FieldType.STRING,
            "Base domain of the provider (default okta.com); a value with '://' is the origin.",
        ),
        "bypass_idp_mfa": Field(
            FieldType.BOOL, "Skip the provider's MFA request (also ignores PASSWORD_EXPIRED)."
        ),
    }
    return {**fields, **token_fields()}


@dataclass(frozen=True, slots=True)
class IdpConfig:
    org_name: str
    api_token: str = ""
    base_url: str = ""
    bypass_idp_mfa: bool = False
    token: TokenSettings = field(default_factory=TokenSettings)

    @property
    def origin(self) -> str:
        return origin(self.org_name, self.base_url)

    def updated(self, data: FieldData) -> IdpConfig:
        """This config with the given fields applied (update semantics), validated."""
        changes: dict[str, Any] = {
            name: data.get(name)
            for name in ("org_name", "api_token", "base_url", "bypass_idp_mfa")
            if data.given(name)
        }
        if "org_name" in changes:
            changes["org_name"] = changes["org_name"].strip()
        if "base_url" in changes:
            changes["base_url"] = changes["base_url"].strip()
        result = replace(self, **changes, token=TokenSettings.from_fields(data, self.token))
        _check(result.org_name, result.base_url)
        return result

    def warnings(self) -> list[str]:
        return [MFA_BYPASS_WARNING] if self.bypass_idp_mfa else []

    def public(self) -> dict[str, Any]:
        """The read shape: every SPEC field except ``api_token``."""
        return {
            "org_name": self.org_name,
            "base_url": self.base_url,
            "bypass_idp_mfa": self.bypass_idp_mfa,
            **self.token.public(),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "org_name": self.org_name,
            "api_token": self.api_token,
            "base_url": self.base_url,
            "bypass_idp_mfa": self.bypass_idp_mfa,
            "token": self.token.to_json(),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> IdpConfig:
        return cls(
            org_name=raw["org_name"],
            api_token=raw.get("api_token", ""),
            base_url=raw.get("base_url", ""),
            bypass_idp_mfa=bool(raw.get("bypass_idp_mfa", False)),
            token=TokenSettings.from_json(raw.get("token")),
        )
