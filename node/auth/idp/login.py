"""The login decision: act on the provider's transaction status, then policies.

Follows the reference: ``LOCKED_OUT`` always fails; ``MFA_REQUIRED`` is
satisfied by verifying the TOTP factor with the caller's ``totp``, or skipped
with ``bypass_idp_mfa``, which also lets ``PASSWORD_EXPIRED`` (and MFA
enrollment) through, since the provider reveals an expired password only
after MFA. Provider groups are looked up only with an ``api_token``.
Push and other interactive factors are not supported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from node.auth.idp.config import IdpConfig
from node.auth.idp.errors import LoginFailedError, UpstreamError
from node.auth.idp.mappings import Mappings
from node.auth.idp.provider import ProviderClient
from node.auth.idp.wire import TOTP_FACTOR, AuthnResult

__all__ = [
    "FAILED",
    "NO_GROUPS_WARNING",
    "NO_TOKEN_LOGIN_WARNING",
    "Granted",
    "authenticate",
    "policies_for",
]

FAILED = "idp authentication failed"
NO_GROUPS_WARNING = "no provider groups found; only policies from locally-defined groups available"
NO_TOKEN_LOGIN_WARNING = (
    "no api_token is configured, so provider groups were not looked up; only policies "
    "from locally-defined groups available"
)
PASSWORD_WARN_WARNING = (
    "Your identity provider password is in warning state and needs to be changed soon."
)
EXPIRED_BYPASSED_WARNING = (
    "the identity provider reports the password as expired; login allowed because "
    "bypass_idp_mfa is set"
)


@dataclass(frozen=True, slots=True)
class Granted:
    """A login the provider accepted: its groups there, and warnings to show."""

    provider_groups: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def _mfa(
    client: ProviderClient, result: AuthnResult, totp: str, forwarded_for: str
) -> AuthnResult:
    factor = result.totp_factor()
    if factor is None:
        raise LoginFailedError(
            f"MFA is required, but the user has no TOTP factor ({TOTP_FACTOR}) enrolled; "
            "other factors are not supported"
        )
    if not totp:
        raise LoginFailedError("'totp' passcode parameter is required to perform MFA")
    verified = await client.verify(factor.id, result.state_token, totp, forwarded_for)
    if verified.status == "MFA_CHALLENGE":
        if verified.factor_result == "REJECTED":
            raise LoginFailedError("multi-factor authentication denied")
        if verified.factor_result == "TIMEOUT":
            raise LoginFailedError("failed to complete multi-factor authentication")
        raise LoginFailedError(FAILED)
    return verified


async def authenticate(
    client: ProviderClient,
    config: IdpConfig,
    username: str,
    password: str,
    totp: str = "",
    forwarded_for: str = "",
) -> Granted:
    """Raise ``LoginFailedError`` or ``UpstreamError``, or say what was granted."""
    bypass = config.bypass_idp_mfa
    result = await client.authn(username, password)
    user_id = result.user_id
    if result.status == "MFA_REQUIRED" and not bypass:
        result = await _mfa(client, result, totp, forwarded_for)
        user_id = user_id or result.user_id
    warnings: list[str] = []
    match result.status:
        case "SUCCESS":
            pass
        case "PASSWORD_WARN":
            warnings.append(PASSWORD_WARN_WARNING)
        case "MFA_REQUIRED" if bypass:
            pass
        case "MFA_ENROLL" | "MFA_ENROLL_ACTIVATE":
            if not bypass:
                raise LoginFailedError(f"{FAILED}: you must complete MFA enrollment to continue")
        case "PASSWORD_EXPIRED" if bypass:
            warnings.append(EXPIRED_BYPASSED_WARNING)
        case _:
            # LOCKED_OUT, PASSWORD_EXPIRED without bypass, and anything unknown.
            raise LoginFailedError(FAILED)
    if not config.api_token:
        return Granted([], [*warnings, NO_TOKEN_LOGIN_WARNING])
    if not user_id:
        raise UpstreamError(
            "identity provider's answer has no user id (_embedded.user.id) to look up groups"
        )
    groups = await client.user_groups(user_id)
    if not groups:
        warnings.append(NO_GROUPS_WARNING)
    return Granted(groups, warnings)


async def policies_for(
    mappings: Mappings, username: str, provider_groups: list[str]
) -> tuple[list[str], list[str]]:
    """(policies, all group names): groups' policies, then the user's own.

    Provider groups count only where a local group of that name exists;
    the user's locally assigned groups are added to them.
    """
    user = await mappings.user(username)
    names = list(provider_groups) + (user.groups if user else [])
    all_groups = list(dict.fromkeys(n for n in names if n))
    policies: list[str] = []
    for name in all_groups:
        group = await mappings.group(name)
        if group is not None:
            policies.extend(group.policies)
    if user is not None:
        policies.extend(user.policies)
    return list(dict.fromkeys(policies)), all_groups
