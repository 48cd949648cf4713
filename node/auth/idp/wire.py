"""Parsing of the provider's (Okta authn API) answers into typed values.

Everything here is pure so the rules can be unit-tested without a network:
what counts as a usable answer, what is the provider refusing the login
(an Okta error body on a 4xx), and what is garbage (``MalformedReply``,
which the caller turns into a 502).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

__all__ = [
    "TOTP_FACTOR",
    "AuthnResult",
    "Factor",
    "MalformedReply",
    "ProviderError",
    "next_link",
    "parse_authn",
    "parse_error",
    "parse_groups",
    "same_origin",
]

TOTP_FACTOR = "token:software:totp"
_MAX_SHOWN = 200


class MalformedReply(ValueError):
    """The body is not the JSON shape the provider's API promises."""


@dataclass(frozen=True, slots=True)
class ProviderError:
    """An Okta-shaped error body: ``{"errorCode", "errorSummary", ...}``."""

    code: str
    summary: str
    causes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        text = self.summary or "error"
        if self.causes:
            text += f" ({'; '.join(self.causes)})"
        return f"{text} (code={self.code})" if self.code else text


@dataclass(frozen=True, slots=True)
class Factor:
    id: str
    type: str
    provider: str = ""


@dataclass(frozen=True, slots=True)
class AuthnResult:
    """One authn transaction state (from ``/authn`` or a factor verify)."""

    status: str
    state_token: str = ""
    user_id: str = ""
    factors: list[Factor] = field(default_factory=list)
    factor_result: str = ""

    def totp_factor(self) -> Factor | None:
        """The TOTP factor to verify, preferring the provider's own (``OKTA``)."""
        found = [f for f in self.factors if f.type == TOTP_FACTOR]
        found.sort(key=lambda f: f.provider != "OKTA")
        return found[0] if found else None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        shown = body[:_MAX_SHOWN].decode("utf-8", "replace")
        raise MalformedReply(f"reply is not JSON: {shown!r}") from None


def _string(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedReply(f"{key!r} is not a string")
    return value


def _object(raw: Any, what: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise MalformedReply(f"{what} is not an object")
    return raw


def parse_error(body: bytes) -> ProviderError | None:
    """The Okta error in ``body``, or ``None`` if it is not one."""
    try:
        raw = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(raw, dict):
        return None
    code, summary = raw.get("errorCode"), raw.get("errorSummary")
    if not isinstance(code, str) or not isinstance(summary, str) or not code:
        return None
    causes = raw.get("errorCauses")
    texts = []
    if isinstance(causes, list):
        for cause in causes:
            if isinstance(cause, dict) and isinstance(cause.get("errorSummary"), str):
                texts.append(cause["errorSummary"])
    return ProviderError(code, summary, texts)


def parse_authn(body: bytes) -> AuthnResult:
    """An authn transaction; a missing ``status`` makes the reply malformed."""
    raw = _object(_json(body), "reply")
    status = _string(raw, "status")
    if not status:
        raise MalformedReply("reply has no 'status'")
    embedded = _object(raw.get("_embedded"), "'_embedded'")
    user = _object(embedded.get("user"), "'_embedded.user'")
    factors_raw = embedded.get("factors")
    if factors_raw is None:
        factors_raw = []
    if not isinstance(factors_raw, list):
        raise MalformedReply("'_embedded.factors' is not a list")
    factors = []
    for item in factors_raw:
        factor = _object(item, "a factor")
        factors.append(
            Factor(
                _string(factor, "id"), _string(factor, "factorType"), _string(factor, "provider")
            )
        )
    return AuthnResult(
        status=status,
        state_token=_string(raw, "stateToken"),
        user_id=_string(user, "id"),
        factors=factors,
        factor_result=_string(raw, "factorResult"),
    )


def parse_groups(body: bytes) -> list[str]:
    """The ``profile.name`` of each group in one page of a user's groups."""
    raw = _json(body)
    if not isinstance(raw, list):
        raise MalformedReply("group listing is not a JSON array")
    names = []
    for item in raw:
        profile = _object(_object(item, "a group").get("profile"), "a group's 'profile'")
        name = profile.get("name")
        if not isinstance(name, str):
            raise MalformedReply("a group has no 'profile.name'")
        names.append(name)
    return names


_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^,;]*)*)")
_REL = re.compile(r"""rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))""", re.IGNORECASE)


def next_link(link_header: str, current_url: str) -> str | None:
    """The absolute URL of the ``rel="next"`` entry of a ``Link`` header."""
    for match in _LINK.finditer(link_header):
        rel = _REL.search(match.group(2))
        if rel and "next" in (rel.group(1) or rel.group(2) or "").lower().split():
            target: str = match.group(1)
            return urljoin(current_url, target.strip())
    return None


def same_origin(url: str, base: str) -> bool:
    """Whether ``url`` has ``base``'s scheme, host and port (default ports filled in)."""
    a, b = urlsplit(url), urlsplit(base)
    defaults = {"http": 80, "https": 443}
    try:
        port_a = a.port or defaults.get(a.scheme)
        port_b = b.port or defaults.get(b.scheme)
    except ValueError:
        return False
    return (a.scheme, a.hostname, port_a) == (b.scheme, b.hostname, port_b)
